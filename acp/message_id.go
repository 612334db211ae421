package acp

// This file defines the messageId of the chunks of a message (ACP
// ContentChunk.messageId): all chunks of one message share it, and a new
// one starts a new message. Ids are UUIDs, as ACP asks, and come from the
// log, so the live stream and every replay of a session give the same
// ones: a user message's is the id recorded with it (the client's own
// messageId when its prompt carried one), an assistant message's is a
// name-based UUID of the session and the message's turn and step.

import (
	"fmt"

	"github.com/google/uuid"
)

// messageIDSpace is the namespace of derived message ids.
var messageIDSpace = uuid.NewSHA1(uuid.NameSpaceURL, []byte("acp-agent:message-id"))

// assistantMessageID is the messageId of the model's reply of (turn, step)
// in session sid.
func assistantMessageID(sid string, turn, step int) string {
	return uuid.NewSHA1(messageIDSpace, fmt.Appendf(nil, "%s/assistant/%d/%d", sid, turn, step)).String()
}

// userMessageID is the messageId of the user message recorded with id in
// session sid: id itself when it is a UUID, else one derived from it.
func userMessageID(sid, id string) string {
	if isUUID(id) {
		return id
	}
	return uuid.NewSHA1(messageIDSpace, []byte(sid+"/user/"+id)).String()
}

// isUUID reports whether s is a UUID in its canonical 36-character form.
func isUUID(s string) bool {
	if len(s) != 36 {
		return false
	}
	_, err := uuid.Parse(s)
	return err == nil
}

// withSession names the session whose events t translates (message ids
// are derived from it).
func (t *translator) withSession(id string) *translator {
	t.session = id
	return t
}
