package session

// TypeSystemPrompt records the system prompt a session's model calls use.
// It is appended once, before the session's first model request (after
// any seed: a forked child records its own), and from then on it is the
// prompt: a loaded, resumed or replayed session uses the recorded text,
// not a freshly assembled one, so the model sees exactly what it saw.
const TypeSystemPrompt = "session/system-prompt"

// SystemPromptData is the payload of session/system-prompt.
type SystemPromptData struct {
	Text string `json:"text"`
}

// RecordedSystemPrompt returns the text of the last session/system-prompt
// event of events (pass the own suffix, after the seed), and whether
// there is one.
func RecordedSystemPrompt(events []Event) (string, bool, error) {
	for i := len(events) - 1; i >= 0; i-- {
		if events[i].Type != TypeSystemPrompt {
			continue
		}
		d, err := DecodeData[SystemPromptData](events[i])
		if err != nil {
			return "", false, err
		}
		return d.Text, true, nil
	}
	return "", false, nil
}
