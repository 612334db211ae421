package app

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/model"
)

func writeScript(t *testing.T, dir, name string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("model:\n  main:\n    - text: hi\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestResolveModelsGivesEachModelARoute(t *testing.T) {
	dir := t.TempDir()
	a, b := writeScript(t, dir, "fast.yaml"), writeScript(t, dir, "smart.yaml")
	fake := func(mc ModelConfig) (model.Model, error) { return routedModel{}, nil }

	choices, why, err := resolveModels(Config{Model: "script:" + a + ", script:" + b + ",openai/gpt-4.1", Provider: fake})
	if err != nil || why != nil {
		t.Fatal(err, why)
	}
	var ids []string
	for _, c := range choices {
		ids = append(ids, c.ID())
	}
	if want := []string{"script/fast", "script/smart", "openai/gpt-4.1"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("ids = %v, want %v", ids, want)
	}
	opts := pickerOptions(choices)
	if len(opts) != 3 || opts[0].ID != "script/fast" || opts[0].Name != "fast" || opts[2].Name != "gpt-4.1" {
		t.Errorf("picker options = %+v", opts)
	}

	// One model: as before, no route for a script and no picker.
	one, _, err := resolveModels(Config{Model: "script:" + a})
	if err != nil || len(one) != 1 || one[0].Route != (model.Route{}) || pickerOptions(one) != nil {
		t.Errorf("one model: %+v, %v", one, err)
	}
	// None: the explanation.
	if none, why, err := resolveModels(Config{}); none != nil || why == nil || err != nil {
		t.Errorf("no model: %v %v %v", none, why, err)
	}
	// The same model twice, and a broken second model, fail at start-up.
	if _, _, err := resolveModels(Config{Model: "script:" + a + ",script:" + a}); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Errorf("duplicate: %v", err)
	}
	if _, _, err := resolveModels(Config{Model: "script:" + a + ",script:" + filepath.Join(dir, "missing.yaml")}); err == nil {
		t.Error("missing second script accepted")
	}
}
