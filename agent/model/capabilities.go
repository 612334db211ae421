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
