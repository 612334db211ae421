package model

// ImageInput is implemented by models that take image parts in user
// messages (session.BlockImage). A model that does not implement it takes
// none, and prompts with images are refused before they reach it.
type ImageInput interface {
	AcceptsImages() bool
}

// AcceptsImages reports whether m takes image input.
func AcceptsImages(m Model) bool {
	im, ok := m.(ImageInput)
	return ok && im.AcceptsImages()
}

// ThinkingSwitch is implemented by models that think before answering
// (extended thinking, reasoning) and can be asked not to
// (Request.NoThinking). A model that does not implement it, or answers
// false, has no thinking a session could turn off, and the "thinking"
// option is not offered for it.
type ThinkingSwitch interface {
	SwitchesThinking() bool
}

// SwitchesThinking reports whether m's thinking can be turned off.
func SwitchesThinking(m Model) bool {
	ts, ok := m.(ThinkingSwitch)
	return ok && ts.SwitchesThinking()
}
