package settings_test

import (
	"slices"
	"testing"

	"github.com/acp-agent/acp-agent/agent/settings"
)

func TestCommandEnv(t *testing.T) {
	environ := []string{"PATH=/bin", "OPENAI_API_KEY=sk-1", "MY_SERVICE_TOKEN=t", "db_password=p", "AWS_SECRET_ACCESS_KEY=s",
		"GITHUB_TOKEN=g", "HOME=/h", "MY_PROVIDER=x", "FOO=1"}
	for _, tt := range []struct {
		name string
		keys []string
		env  settings.Env
		want []string
	}{
		{"defaults", nil, settings.Env{}, []string{"PATH=/bin", "HOME=/h", "MY_PROVIDER=x", "FOO=1"}},
		{"provider key var", []string{"MY_PROVIDER"}, settings.Env{}, []string{"PATH=/bin", "HOME=/h", "FOO=1"}},
		{"include keeps a secret-looking name", nil, settings.Env{Include: []string{"github_*"}},
			[]string{"PATH=/bin", "GITHUB_TOKEN=g", "HOME=/h", "MY_PROVIDER=x", "FOO=1"}},
		{"include never keeps the provider key", []string{"OPENAI_API_KEY"}, settings.Env{Include: []string{"*"}},
			[]string{"PATH=/bin", "MY_SERVICE_TOKEN=t", "db_password=p", "AWS_SECRET_ACCESS_KEY=s", "GITHUB_TOKEN=g", "HOME=/h", "MY_PROVIDER=x", "FOO=1"}},
		{"exclude drops more", nil, settings.Env{Exclude: []string{"FOO", "HOME"}}, []string{"PATH=/bin", "MY_PROVIDER=x"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := settings.CommandEnv(environ, tt.keys, tt.env); !slices.Equal(got, tt.want) {
				t.Errorf("got %v\nwant %v", got, tt.want)
			}
		})
	}
}
