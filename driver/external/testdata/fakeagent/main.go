// Command fakeagent is an ACP agent for the tests of package
// driver/external. FAKE_MODE picks its behaviour: normal, crash, hang,
// garbage, initerr, permcancel, nested, terminal. FAKE_OUT, when set, is a file it
// appends what it observed to (one line per fact), its pid first.
package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	acp "github.com/coder/acp-go-sdk"
)

type lockedWriter struct {
	mu sync.Mutex
	f  *os.File
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

type agent struct {
	conn *acp.AgentSideConnection
	out  *lockedWriter
	mode string
}

func note(format string, args ...any) {
	path := os.Getenv("FAKE_OUT")
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return
	}
	defer f.Close()
	fmt.Fprintf(f, format+"\n", args...)
}

func (a *agent) Initialize(ctx context.Context, req acp.InitializeRequest) (acp.InitializeResponse, error) {
	if a.mode == "initerr" {
		return acp.InitializeResponse{}, &acp.RequestError{Code: -32000, Message: "Authentication required", Data: map[string]any{"hint": "set FAKE_KEY"}}
	}
	note("initialize fs=%v terminal=%v", req.ClientCapabilities.Fs.ReadTextFile && req.ClientCapabilities.Fs.WriteTextFile, req.ClientCapabilities.Terminal)
	return acp.InitializeResponse{
		ProtocolVersion:   acp.ProtocolVersionNumber,
		AgentCapabilities: acp.AgentCapabilities{LoadSession: os.Getenv("FAKE_NOLOAD") == ""},
		AgentInfo:         &acp.Implementation{Name: "fakeagent", Version: "1.0"},
		AuthMethods:       []acp.AuthMethod{},
	}, nil
}

func (a *agent) Authenticate(context.Context, acp.AuthenticateRequest) (acp.AuthenticateResponse, error) {
	return acp.AuthenticateResponse{}, nil
}

func (a *agent) NewSession(_ context.Context, req acp.NewSessionRequest) (acp.NewSessionResponse, error) {
	note("new %s", req.Cwd)
	return acp.NewSessionResponse{SessionId: "fake-1"}, nil
}

func (a *agent) LoadSession(_ context.Context, req acp.LoadSessionRequest) (acp.LoadSessionResponse, error) {
	note("load %s", req.SessionId)
	// A replay the client must not take for a new turn.
	_ = a.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: req.SessionId, Update: acp.UpdateAgentMessageText("REPLAYED")})
	return acp.LoadSessionResponse{}, nil
}

func (a *agent) Cancel(_ context.Context, n acp.CancelNotification) error {
	note("cancel %s", n.SessionId)
	return nil
}

func (a *agent) CloseSession(context.Context, acp.CloseSessionRequest) (acp.CloseSessionResponse, error) {
	return acp.CloseSessionResponse{}, acp.NewMethodNotFound("session/close")
}
func (a *agent) ListSessions(context.Context, acp.ListSessionsRequest) (acp.ListSessionsResponse, error) {
	return acp.ListSessionsResponse{}, acp.NewMethodNotFound("session/list")
}
func (a *agent) ResumeSession(context.Context, acp.ResumeSessionRequest) (acp.ResumeSessionResponse, error) {
	return acp.ResumeSessionResponse{}, acp.NewMethodNotFound("session/resume")
}
func (a *agent) SetSessionConfigOption(context.Context, acp.SetSessionConfigOptionRequest) (acp.SetSessionConfigOptionResponse, error) {
	return acp.SetSessionConfigOptionResponse{}, acp.NewMethodNotFound("session/set_config_option")
}
func (a *agent) SetSessionMode(context.Context, acp.SetSessionModeRequest) (acp.SetSessionModeResponse, error) {
	return acp.SetSessionModeResponse{}, acp.NewMethodNotFound("session/set_mode")
}

func (a *agent) say(sid acp.SessionId, text string) {
	_ = a.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: sid, Update: acp.UpdateAgentMessageText(text)})
}

func (a *agent) update(sid acp.SessionId, u acp.SessionUpdate) {
	_ = a.conn.SessionUpdate(context.Background(), acp.SessionNotification{SessionId: sid, Update: u})
}

func (a *agent) Prompt(ctx context.Context, req acp.PromptRequest) (acp.PromptResponse, error) {
	sid := req.SessionId
	var task string
	for _, b := range req.Prompt {
		if b.Text != nil {
			task += b.Text.Text
		}
	}
	note("prompt %s", task)
	switch a.mode {
	case "crash":
		a.say(sid, "starting ")
		fmt.Fprintln(os.Stderr, "fakeagent: boom, out of memory")
		os.Exit(3)
	case "hang":
		select {}
	case "garbage":
		a.say(sid, "starting ")
		time.Sleep(50 * time.Millisecond)
		a.out.Write([]byte("panic: this is not json\n"))
		select {}
	case "permcancel":
		a.update(sid, acp.StartToolCall("t1", "Long job", acp.WithStartKind(acp.ToolKindExecute), acp.WithStartStatus(acp.ToolCallStatusInProgress)))
		<-ctx.Done()
		resp, err := a.conn.RequestPermission(context.WithoutCancel(ctx), acp.RequestPermissionRequest{
			SessionId: sid,
			ToolCall:  acp.ToolCallUpdate{ToolCallId: "t1", Title: acp.Ptr("rm -rf build")},
			Options: []acp.PermissionOption{
				{OptionId: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		switch {
		case err != nil:
			note("permission error %v", err)
		case resp.Outcome.Cancelled != nil:
			note("permission cancelled")
		default:
			note("permission selected %s", resp.Outcome.Selected.OptionId)
		}
		a.update(sid, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		return acp.PromptResponse{StopReason: acp.StopReasonCancelled}, nil
	case "terminal":
		// A command that prints, then waits for a file: its first line must
		// be readable through terminal/output while it still runs.
		cwd, _ := os.Getwd()
		term, err := a.conn.CreateTerminal(ctx, acp.CreateTerminalRequest{SessionId: sid, Command: "sh",
			Args: []string{"-c", "echo first; while [ ! -f release ]; do sleep 0.02; done; echo second"}})
		if err != nil {
			note("terminal error %v", err)
			return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
		}
		streamed := false
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
			out, err := a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: term.TerminalId})
			if err != nil {
				note("terminal output error %v", err)
				break
			}
			if out.ExitStatus != nil {
				note("terminal exited before its output was seen")
				break
			}
			if strings.Contains(out.Output, "first") {
				note("streamed %q", strings.TrimSpace(out.Output))
				streamed = true
				break
			}
		}
		_ = os.WriteFile(cwd+"/release", nil, 0o600)
		if _, err := a.conn.WaitForTerminalExit(ctx, acp.WaitForTerminalExitRequest{SessionId: sid, TerminalId: term.TerminalId}); err != nil {
			note("wait error %v", err)
		}
		out, _ := a.conn.TerminalOutput(ctx, acp.TerminalOutputRequest{SessionId: sid, TerminalId: term.TerminalId})
		note("final %q exited=%v streamed=%v", strings.TrimSpace(out.Output), out.ExitStatus != nil, streamed)
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	case "nested":
		line := `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + string(sid) + `","update":{"sessionUpdate":"subagent_update","sessionId":"nested-7","title":"Scout","description":"looks around","state":{"state":"running"}}}}` + "\n"
		a.out.Write([]byte(line))
		a.say(sid, "delegated ")
		line = `{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"` + string(sid) + `","update":{"sessionUpdate":"subagent_update","sessionId":"nested-7","state":{"state":"idle","stopReason":"end_turn"}}}}` + "\n"
		a.out.Write([]byte(line))
		a.say(sid, "done")
		return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
	}
	// normal: read notes.txt through the client, then (when asked to)
	// write it after asking permission.
	a.say(sid, "reading ")
	a.update(sid, acp.StartReadToolCall("t1", "Read notes.txt", "notes.txt"))
	rd, err := a.conn.ReadTextFile(ctx, acp.ReadTextFileRequest{SessionId: sid, Path: "notes.txt"})
	if err != nil {
		a.update(sid, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusFailed), acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(err.Error()))})))
	} else {
		a.update(sid, acp.UpdateToolCall("t1", acp.WithUpdateStatus(acp.ToolCallStatusCompleted), acp.WithUpdateContent([]acp.ToolCallContent{acp.ToolContent(acp.TextBlock(rd.Content))})))
	}
	if strings.Contains(task, "write") {
		a.update(sid, acp.StartEditToolCall("t2", "Write notes.txt", "notes.txt", nil))
		resp, err := a.conn.RequestPermission(ctx, acp.RequestPermissionRequest{
			SessionId: sid,
			ToolCall:  acp.ToolCallUpdate{ToolCallId: "t2"},
			Options: []acp.PermissionOption{
				{OptionId: "yes", Name: "Allow", Kind: acp.PermissionOptionKindAllowOnce},
				{OptionId: "no", Name: "Reject", Kind: acp.PermissionOptionKindRejectOnce},
			},
		})
		if err == nil && resp.Outcome.Selected != nil && resp.Outcome.Selected.OptionId == "yes" {
			_, werr := a.conn.WriteTextFile(ctx, acp.WriteTextFileRequest{SessionId: sid, Path: "notes.txt", Content: "written by fakeagent\n"})
			if werr != nil {
				note("write error %v", werr)
				a.update(sid, acp.UpdateToolCall("t2", acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
			} else {
				a.update(sid, acp.UpdateToolCall("t2", acp.WithUpdateStatus(acp.ToolCallStatusCompleted)))
			}
		} else {
			note("write refused")
			a.update(sid, acp.UpdateToolCall("t2", acp.WithUpdateStatus(acp.ToolCallStatusFailed)))
		}
	}
	a.say(sid, "done: "+task)
	return acp.PromptResponse{StopReason: acp.StopReasonEndTurn}, nil
}

func main() {
	a := &agent{mode: os.Getenv("FAKE_MODE"), out: &lockedWriter{f: os.Stdout}}
	note("pid %d", os.Getpid())
	a.conn = acp.NewAgentSideConnection(a, a.out, os.Stdin)
	<-a.conn.Done()
}
