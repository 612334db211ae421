package acp

// This file defines slash commands: the list offered to the client
// (available_commands_update after session/new and session/load) and the
// prompts that invoke one. A command is answered by the agent host itself,
// without a model turn, as agent_message_chunk text followed by stopReason
// end_turn. Command exchanges are not recorded in the session log: they
// are views of the host's state (the subagent catalog), not conversation,
// so the model never sees them and session/load does not replay them.

import (
	"context"
	"fmt"
	"sort"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"
)

// Command is a slash command ("/agents"). Name has no slash.
type Command struct {
	Name        string
	Description string
	// Hint, when set, describes the command's free-text input.
	Hint string
	// Run answers the command on session sessionID with Markdown text.
	// input is the text after the command name, trimmed. An error is shown
	// to the user as the answer.
	Run func(ctx context.Context, sessionID, input string) (string, error)
}

// availableCommands returns the available_commands_update of this
// server's commands, or false when there are none.
func (s *Server) availableCommands() (acpsdk.SessionUpdate, bool) {
	if len(s.opts.Commands) == 0 {
		return acpsdk.SessionUpdate{}, false
	}
	cmds := make([]acpsdk.AvailableCommand, 0, len(s.opts.Commands))
	for _, c := range s.sortedCommands() {
		ac := acpsdk.AvailableCommand{Name: c.Name, Description: c.Description}
		if c.Hint != "" {
			ac.Input = &acpsdk.AvailableCommandInput{Unstructured: &acpsdk.UnstructuredCommandInput{Hint: c.Hint}}
		}
		cmds = append(cmds, ac)
	}
	return acpsdk.SessionUpdate{AvailableCommandsUpdate: &acpsdk.SessionAvailableCommandsUpdate{AvailableCommands: cmds}}, true
}

func (s *Server) sortedCommands() []Command {
	out := append([]Command(nil), s.opts.Commands...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// slashCommand reports whether a prompt invokes a command: its first block
// is text whose first word is "/name", name being letters, digits, "-"
// and "_" (so a prompt starting with a path such as "/home/x" is not a
// command). input is the rest of that text, trimmed.
func slashCommand(prompt []acpsdk.ContentBlock) (name, input string, ok bool) {
	if len(prompt) == 0 || prompt[0].Text == nil {
		return "", "", false
	}
	text := strings.TrimSpace(prompt[0].Text.Text)
	rest, found := strings.CutPrefix(text, "/")
	if !found {
		return "", "", false
	}
	name, input, _ = strings.Cut(rest, " ")
	if i := strings.IndexAny(name, "\n\t"); i >= 0 {
		name, input = name[:i], name[i:]+" "+input
	}
	if name == "" {
		return "", "", false
	}
	for i, c := range name {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c == '-' || i > 0 && c >= '0' && c <= '9'
		if !ok {
			return "", "", false
		}
	}
	return name, strings.TrimSpace(input), true
}

// runCommand answers a command prompt on b without calling the model. An
// unknown command gets the list of known ones. It is admitted like a
// prompt (one at a time per session, cancellable, refused at shutdown).
func (s *Server) runCommand(ctx context.Context, b *bound, ticket int64, name, input string) (acpsdk.PromptResponse, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if err := s.admit(b, cancel, ticket); err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	defer s.prompts.Done()
	defer b.endPrompt()
	var text string
	cmd, known := s.command(name)
	switch {
	case !known:
		text = s.unknownCommand(name)
	default:
		out, err := cmd.Run(ctx, b.id, input)
		if err != nil {
			out = fmt.Sprintf("/%s failed: %v", name, err)
		}
		text = out
	}
	if ctx.Err() != nil {
		return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonCancelled}, nil
	}
	b.em.push(item{direct: []acpsdk.SessionUpdate{acpsdk.UpdateAgentMessageText(text)}})
	if err := s.flush(context.WithoutCancel(ctx), b); err != nil {
		return acpsdk.PromptResponse{}, toRequestError(err)
	}
	s.log.Info("slash command answered", "session_id", b.id, "command", name, "known", known)
	return acpsdk.PromptResponse{StopReason: acpsdk.StopReasonEndTurn}, nil
}

func (s *Server) command(name string) (Command, bool) {
	for _, c := range s.opts.Commands {
		if c.Name == name && c.Run != nil {
			return c, true
		}
	}
	return Command{}, false
}

// unknownCommand is the answer to an unknown "/name".
func (s *Server) unknownCommand(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Unknown command `/%s`.", name)
	cmds := s.sortedCommands()
	if len(cmds) == 0 {
		b.WriteString(" This agent offers no slash commands.")
		return b.String()
	}
	b.WriteString(" Available commands:\n")
	for _, c := range cmds {
		fmt.Fprintf(&b, "\n- `/%s` — %s", c.Name, c.Description)
	}
	return b.String()
}

// sessionReady queues what a client sees once it knows a session: MCP
// start-up notices and the available commands. For session/new it runs
// when the response is written (respond.go); for session/load right after
// the replay, before the response.
func (s *Server) sessionReady(b *bound, notices []acpsdk.SessionUpdate) {
	var direct []acpsdk.SessionUpdate
	direct = append(direct, notices...)
	if u, ok := s.availableCommands(); ok {
		direct = append(direct, u)
	}
	if len(direct) > 0 {
		b.em.push(item{direct: direct})
	}
}
