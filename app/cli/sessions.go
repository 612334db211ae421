package cli

// This file defines the "sessions" subcommand: a table of stored sessions
// and a readable transcript of one, for people inspecting a data directory.

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/acp-agent/acp-agent/app"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/acp-agent/acp-agent/acp"
	"github.com/acp-agent/acp-agent/agent/projection"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/agent/transcript"
	"github.com/acp-agent/acp-agent/persistence"
	"github.com/acp-agent/acp-agent/persistence/projcache"
)

func sessionsCommand() Command {
	var cwd string
	return Command{
		Name:    "sessions",
		Usage:   "sessions [--data-dir DIR] [--cwd DIR]",
		Summary: "list the stored sessions, newest first",
		Description: `Prints one row per session log in the data directory: id, title, creation
and last update time, and the parent session (for subagents and forks).
An unreadable log is listed with the start of the reason in a last PROBLEM
column; 'acp-agent sessions show ID' gives the whole of it. With no session
it says which data directory it read. Nothing is locked or changed.`,
		Examples: []string{
			"acp-agent sessions",
			`acp-agent sessions --cwd "$PWD"`,
			"acp-agent sessions show 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent sessions repair 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
		},
		Common: []string{CommonDataDir},
		Flags: func(fs *flag.FlagSet) {
			fs.StringVar(&cwd, "cwd", "", "only sessions whose working directory is `DIR`")
		},
		Sub: []Command{sessionsShowCommand(), sessionsRepairCommand()},
		Run: func(ctx context.Context, env *Env, args []string) error {
			return runSessions(ctx, env, cwd, args)
		},
	}
}

func sessionsShowCommand() Command {
	var system bool
	return Command{
		Name:    "show",
		Usage:   "sessions show [--data-dir DIR] [--system] ID",
		Summary: "print the transcript of one stored session",
		Description: `Prints the session's header (cwd, creation time, parent, title) and its
conversation: user messages, assistant text and reasoning, tool calls with
their results, and turns that did not complete normally. The log is read,
never locked or repaired. With --system it prints instead the system prompt
the session's model saw, as recorded in its log.`,
		Examples: []string{
			"acp-agent sessions show 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
			"acp-agent sessions show --system 3f2a9c1e-0b7d-4e55-9a51-2c8d0e6f4b10",
		},
		Common: []string{CommonDataDir},
		Flags: func(fs *flag.FlagSet) {
			fs.BoolVar(&system, "system", false, "print the system prompt the session's model saw, as recorded in its log")
		},
		Run: func(ctx context.Context, env *Env, args []string) error {
			return runSessionsShow(ctx, env, system, args)
		},
	}
}

func runSessions(ctx context.Context, env *Env, cwd string, args []string) error {
	if len(args) > 0 {
		return usageErrorf("sessions: unexpected argument %q (did you mean 'sessions show ID'?)", args[0])
	}
	st, err := openReadStore(env)
	if errors.Is(err, errNoDataDir) {
		_, err = fmt.Fprintln(env.Stdout, "ID  TITLE  CREATED  UPDATED  PARENT")
		noSessions(env, " (it does not exist)")
		return err
	}
	if err != nil {
		return err
	}
	defer st.Close()
	rows, err := sessionRows(ctx, st, cwd)
	if err != nil {
		return err
	}
	damaged, err := writeSessionsTable(env.Stdout, st, rows)
	if err != nil || damaged {
		return err
	}
	if len(rows) == 0 {
		why := ""
		if cwd != "" {
			why = " whose working directory is " + cwd
		}
		noSessions(env, why)
	}
	return nil
}

// sessionRow is one line of the sessions table.
type sessionRow struct {
	id, title, created, parent string
	// problem, for an unreadable log, is its reason (cut in the table).
	problem string
	mod     int64
}

// sessionRows lists the stored sessions (those working in cwd, when it is
// set) newest first, each with its title and what is wrong with its log:
// titles and repair summaries from the catalog index where its rows are
// valid, else from the log.
func sessionRows(ctx context.Context, st *persistence.Store, cwd string) ([]sessionRow, error) {
	entries, known, err := indexedSessions(ctx, st)
	if err != nil {
		return nil, err
	}
	bad, err := unlistedSessions(ctx, st, entries)
	if err != nil {
		return nil, err
	}
	if cwd != "" {
		want, err := filepath.Abs(cwd)
		if err != nil {
			return nil, err
		}
		entries = slices.DeleteFunc(entries, func(e persistence.Entry) bool { return filepath.Clean(e.Header.Cwd) != want })
		bad = nil // no header, so no cwd to match
	}
	// Parent chains that loop are shown as corrupt and never walked.
	parentOf := make(map[string]string, len(entries))
	for _, e := range entries {
		parentOf[e.Header.ID] = e.Header.ParentSession
	}
	corrupt := session.CorruptParents(parentOf)
	rows := make([]sessionRow, 0, len(entries)+len(bad))
	for _, e := range entries {
		r := sessionRow{id: e.Header.ID, created: humanTime(e.Header.CreatedAt), parent: orDash(e.Header.ParentSession), mod: e.ModTime}
		ix, indexed := known[e.Header.ID]
		repaired := ix.repaired
		if why, ok := corrupt[e.Header.ID]; ok {
			r.title = "(corrupt: " + why + ")"
		} else if indexed {
			r.title = transcript.OneLine(ix.title, 48)
		} else if snap, err := st.Inspect(ctx, e.Header.ID); err == nil {
			r.title = transcript.OneLine(acp.LatestTitle(snap.Events), 48)
			if sum, ok := session.Repaired(snap.Events); ok {
				repaired = &sum
			}
		} else {
			r.title, r.problem = "(unreadable)", app.Reason(err)
		}
		if repaired != nil {
			// A repaired log reads fine but lost lines: not healthy.
			r.problem = persistence.RepairedDamage(e.Header.ID, app.LogPath(st, e.Header.ID), *repaired).Text()
		}
		rows = append(rows, r)
	}
	for _, u := range bad {
		rows = append(rows, sessionRow{id: u.ID, title: "(unreadable)", problem: persistence.UnreadableDamage(u).Text(), created: "-", parent: "-", mod: u.ModTime})
	}
	slices.SortFunc(rows, func(a, b sessionRow) int {
		if a.mod != b.mod {
			if a.mod > b.mod {
				return -1
			}
			return 1
		}
		return strings.Compare(a.id, b.id)
	})
	return rows, nil
}

// writeSessionsTable writes rows as a table to w, with a PROBLEM column
// and a hint after it when a row has a problem (damaged).
func writeSessionsTable(w io.Writer, st *persistence.Store, rows []sessionRow) (damaged bool, err error) {
	damaged = slices.ContainsFunc(rows, func(r sessionRow) bool { return r.problem != "" })
	var table bytes.Buffer
	tw := tabwriter.NewWriter(&table, 0, 4, 2, ' ', 0)
	if damaged {
		// The reason is the last cell (tabwriter does not align it, so it
		// never widens the columns before it), cut to problemWidth.
		fmt.Fprintln(tw, "ID\tTITLE\tCREATED\tUPDATED\tPARENT\tPROBLEM")
	} else {
		fmt.Fprintln(tw, "ID\tTITLE\tCREATED\tUPDATED\tPARENT")
	}
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s", r.id, r.title, r.created, humanTime(r.mod), r.parent)
		if damaged {
			// The row names the log; its directory is the data directory's.
			problem := strings.ReplaceAll(r.problem, st.Dir()+string(filepath.Separator), "")
			fmt.Fprintf(tw, "\t%s", transcript.OneLine(problem, problemWidth))
		}
		fmt.Fprintln(tw)
	}
	if err := tw.Flush(); err != nil {
		return damaged, err
	}
	// A readable row's empty PROBLEM cell leaves padding behind.
	for line := range strings.Lines(table.String()) {
		if _, err := fmt.Fprintln(w, strings.TrimRight(line, " \n")); err != nil {
			return damaged, err
		}
	}
	if damaged {
		_, err = fmt.Fprintln(w, "(for the whole reason: acp-agent sessions show ID; to repair a log: acp-agent sessions repair ID)")
	}
	return damaged, err
}

// problemWidth bounds the PROBLEM cell of the sessions table.
const problemWidth = 40

// noSessions says on stderr which data directory an empty listing read,
// so a mistaken --data-dir (or ACP_AGENT_DATA_DIR) shows.
func noSessions(env *Env, why string) {
	dir, err := env.Flags.dataDir()
	if err != nil {
		return
	}
	fmt.Fprintf(env.Stderr, "acp-agent: no sessions in %s%s (another directory: --data-dir DIR or %s)\n",
		filepath.Join(dir, "sessions"), why, EnvDataDir)
}

// unlistedSessions reports the session files of the data dir that a
// listing left out because their header cannot be read (a FIFO, a
// directory, an empty file, a bad header...), one row each.
func unlistedSessions(ctx context.Context, st *persistence.Store, listed []persistence.Entry) ([]persistence.Unreadable, error) {
	// Names only: os.ReadDir would make and sort a DirEntry per log.
	d, err := os.Open(st.Dir())
	if err != nil {
		return nil, err
	}
	names, err := d.Readdirnames(-1)
	d.Close()
	if err != nil {
		return nil, err
	}
	seen := make(map[string]bool, len(listed))
	for _, e := range listed {
		seen[e.Header.ID] = true
	}
	var bad []persistence.Unreadable
	for _, name := range names {
		id, ok := strings.CutSuffix(name, ".jsonl")
		if !ok || seen[id] || session.ValidateID(id) != nil {
			continue
		}
		if u, ok := st.Check(ctx, id); ok {
			bad = append(bad, u)
		}
	}
	return bad, ctx.Err()
}

// indexedValues is what the catalog index knows of a session without
// reading its log: its title and its repair summary (nil: never
// repaired).
type indexedValues struct {
	title    string
	repaired *session.RepairedData
}

// indexedSessions lists the stored sessions through the catalog index,
// with the title and repair summary its valid rows hold (a session
// without both is read by the caller). Without a usable index it is
// persistence's List.
func indexedSessions(ctx context.Context, st *persistence.Store) ([]persistence.Entry, map[string]indexedValues, error) {
	reg := projection.New()
	cache, err := func() (*projcache.Cache, error) {
		for _, u := range []projection.Unit{projection.Title(), projection.Repaired()} {
			if _, err := reg.Register(u); err != nil {
				return nil, err
			}
		}
		return projcache.Open(filepath.Dir(st.Dir()), reg)
	}()
	if err != nil {
		entries, err := st.List(ctx)
		return entries, nil, err
	}
	rows, err := cache.Index(st.Dir(), app.HeaderReader(st)).Scan(ctx, nil)
	if err != nil {
		return nil, nil, err
	}
	entries := make([]persistence.Entry, len(rows))
	known := make(map[string]indexedValues, len(rows))
	for i, r := range rows {
		entries[i] = persistence.Entry{Header: r.Header, Size: r.Size, ModTime: r.ModTime}
		t, ok := app.IndexedTitle(r.Values)
		sum, rok := app.IndexedRepaired(r.Values)
		if ok && rok {
			known[r.Header.ID] = indexedValues{title: t, repaired: sum}
		}
	}
	return entries, known, nil
}

func runSessionsShow(ctx context.Context, env *Env, system bool, args []string) error {
	id, st, err := openOneSession(env, "sessions show", args)
	if err != nil {
		return err
	}
	defer st.Close()
	snap, err := st.Inspect(ctx, id)
	if err != nil {
		return sessionError(id, err)
	}
	if system {
		return writeSystemPrompt(env.Stdout, snap.Header, snap.Events)
	}
	// A log another process is writing ends in a turn that is running,
	// not one a crash interrupted: show it open, not "ended interrupted".
	elsewhere, err := st.HeldElsewhere(id)
	if err != nil {
		return sessionError(id, err)
	}
	events := snap.Events
	open := 0
	if elsewhere && snap.Synthetic > 0 {
		closers := events[len(events)-snap.Synthetic:]
		events = events[:len(events)-snap.Synthetic]
		for _, ev := range closers {
			if d, err := session.DecodeData[session.TurnEndData](ev); err == nil && ev.Type == session.TypeTurnEnd {
				open = d.Turn
			}
		}
	}
	if err := WriteTranscript(env.Stdout, snap.Header, events); err != nil {
		return err
	}
	if open > 0 {
		if _, err := fmt.Fprintf(env.Stdout, "\n[turn %d open (running elsewhere)]\n", open); err != nil {
			return err
		}
	}
	// What the log lost, worded as every command words it: a repair's
	// dropped lines, a torn last line (not while another process writes).
	path := app.LogPath(st, id)
	var marks []persistence.Damage
	if sum, ok := session.Repaired(snap.Events); ok {
		marks = append(marks, persistence.RepairedDamage(id, path, sum))
	}
	if snap.Torn && !elsewhere {
		marks = append(marks, persistence.TornDamage(id, path, len(snap.Events)-snap.Synthetic+2))
	}
	for _, d := range marks {
		if _, err := fmt.Fprintf(env.Stdout, "\n[%s]\n", d.Text()); err != nil {
			return err
		}
	}
	return writeUsage(ctx, env.Stdout, st, id, snap.Events)
}

// badID explains an id session.ValidateID refused.
func badID(id string) string {
	return fmt.Sprintf("%q is not a session id (ids are file names: no path separators, colons, control characters or leading dot)", id)
}

// WriteTranscript renders a session log for people: the header, then the
// conversation (user messages, assistant text and reasoning, tool calls
// with their results) with turn boundaries that did not complete normally
// (transcript.Inspect).
func WriteTranscript(w io.Writer, h session.Header, events []session.Event) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "session %s\n", h.ID)
	if h.Cwd != "" {
		fmt.Fprintf(&b, "  cwd:     %s\n", h.Cwd)
	}
	fmt.Fprintf(&b, "  created: %s\n", humanTime(h.CreatedAt))
	switch {
	case h.ParentSession != "" && h.Origin == session.OriginSubagent:
		fmt.Fprintf(&b, "  parent:  %s (subagent, depth %d)\n", h.ParentSession, h.DelegationDepth)
	case h.ParentSession != "":
		fmt.Fprintf(&b, "  parent:  %s (forked from it)\n", h.ParentSession)
	}
	if t := acp.LatestTitle(events); t != "" {
		fmt.Fprintf(&b, "  title:   %s\n", t)
	}
	if h.SeedLength > 0 {
		fmt.Fprintf(&b, "  (the first %d events were inherited from the parent)\n", h.SeedLength)
	}
	if err := transcript.Write(&b, events, transcript.Inspect); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func humanTime(ms int64) string {
	if ms <= 0 {
		return "-"
	}
	return time.UnixMilli(ms).Format("2006-01-02 15:04:05")
}

// writeSystemPrompt prints the session's recorded system prompt (its own,
// after any inherited seed). A session that never called its model has
// none, which is an error rather than a guess at what it would be.
func writeSystemPrompt(w io.Writer, h session.Header, events []session.Event) error {
	seed := min(max(h.SeedLength, 0), len(events))
	text, ok, err := session.RecordedSystemPrompt(events[seed:])
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("session %s has no recorded system prompt (it has made no model request)", h.ID)
	}
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	_, err = io.WriteString(w, text)
	return err
}
