package cli

import "testing"

// TestMaxBackgroundFromEnv: the environment variable feeds the flag; a
// value that is no positive number is the usage-error marker -1.
func TestMaxBackgroundFromEnv(t *testing.T) {
	env := map[string]string{EnvMaxBackground: "3"}
	if f, _ := flagsFromEnv(func(k string) string { return env[k] }); f.MaxBackground != 3 {
		t.Errorf("env 3: %d", f.MaxBackground)
	}
	env[EnvMaxBackground] = "many"
	if f, _ := flagsFromEnv(func(k string) string { return env[k] }); f.MaxBackground != -1 {
		t.Errorf("env many: %d, want the usage-error marker -1", f.MaxBackground)
	}
}
