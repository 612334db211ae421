package budget_test

import (
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/agentdef"
	"github.com/acp-agent/acp-agent/agent/budget"
	"github.com/acp-agent/acp-agent/agent/model"
)

// Claude Code's model aliases (sonnet, opus, haiku) map to current model
// ids of this table: each is a model the table knows, priced, and the
// newest of its family the table lists (its id ends the family's prefix
// with the highest version).
func TestClaudeAliasesAreCurrentModelsOfTheTable(t *testing.T) {
	for _, alias := range []string{"sonnet", "opus", "haiku"} {
		id := agentdef.ClaudeModelAliases[alias]
		if !strings.HasPrefix(id, "claude-"+alias+"-") {
			t.Errorf("%s maps to %q, not a claude-%s model", alias, id, alias)
			continue
		}
		r := model.Route{Provider: "anthropic", Model: id}
		if budget.KnownWindow(r) == 0 {
			t.Errorf("%s maps to %q, which the built-in table does not know", alias, id)
		}
		if _, ok := budget.KnownPrice(r); !ok {
			t.Errorf("%s maps to %q, which has no price in the built-in table", alias, id)
		}
	}
}
