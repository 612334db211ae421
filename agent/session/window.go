package session

// This file defines the log-only records of what the provider told a
// turn in progress: the context window a refusal stated
// (session/context-window) and the notice shown when a broken answer is
// retried (session/notice). Both are durable, so a rebuilt session knows
// the window without another refusal and session/load shows the notice
// where it was shown live.

// TypeContextWindow records the context window a provider stated when it
// refused a request as too long, for a route whose window no table or
// setting gives. A loaded, resumed or restarted session sizes its
// requests to the last one recorded for its route. It never changes the
// history and shows nothing; it is written ignorable, so a build that
// predates it reads the log without it.
const TypeContextWindow = "session/context-window"

// ContextWindowData is the payload of session/context-window.
type ContextWindowData struct {
	Provider string `json:"provider,omitempty"`
	Model    string `json:"model,omitempty"`
	// Window is the context window in tokens, as the provider stated it.
	Window int `json:"window"`
}

// TypeNotice records a notice shown to the person about the model call
// in progress: the retry of an answer that broke off (the stream stalled
// or was cut). The ACP adapter shows it from this record, live and on
// replay alike. It never changes the history; it is written ignorable.
const TypeNotice = "session/notice"

// NoticeData is the payload of session/notice.
type NoticeData struct {
	Turn int    `json:"turn"`
	Step int    `json:"step"`
	Kind string `json:"kind"` // model.NoticeRetry
	// Message is the text shown.
	Message string `json:"message"`
	// Attempt is the attempt that failed (1-based).
	Attempt int `json:"attempt"`
}
