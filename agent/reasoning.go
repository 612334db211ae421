package agent

import "github.com/acp-agent/acp-agent/agent/session"

// addReasoning folds a reasoning chunk into the reply. Reasoning stays one
// block unless the provider delimits blocks: a signature closes the open
// block (the next reasoning text starts another), and a redacted block
// (Data) stands alone. Providers that verify thinking sent back across
// turns need each block with its own signature.
func (r *reply) addReasoning(c session.Chunk) {
	if c.Data != "" {
		r.closeReasoning()
		r.thoughts = append(r.thoughts, session.Block{Type: session.BlockReasoning, Data: c.Data})
		return
	}
	if c.Text != "" && r.sig != "" {
		r.closeReasoning()
	}
	r.reasoning.WriteString(c.Text)
	if c.Signature != "" {
		r.sig = c.Signature
	}
}

func (r *reply) closeReasoning() {
	if r.reasoning.Len() == 0 && r.sig == "" {
		return
	}
	r.thoughts = append(r.thoughts, session.Block{Type: session.BlockReasoning, Text: r.reasoning.String(), Signature: r.sig})
	r.reasoning.Reset()
	r.sig = ""
}
