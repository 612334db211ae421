package keyenv

import (
	"os"
	"strings"
)

// Hide takes each variable of names that is set in this process's own
// environment (os.LookupEnv) and has the value getenv gives for it out of
// the environment: its value is kept, the variable unset and its bytes
// in the initial environment block overwritten where the system allows
// (scrub; Linux). It returns a getenv that answers the hidden names from
// the kept values and every other name from getenv, and the names whose
// bytes could not be overwritten (still readable from outside, with the
// error saying why).
//
// A name getenv answers differently from the process environment (a
// caller's own environment, in tests) is left alone.
func Hide(names []string, getenv func(string) string) (hidden func(string) string, err error) {
	kept := map[string]string{}
	for _, n := range names {
		if n == "" || strings.ContainsAny(n, "=\x00") {
			continue
		}
		v, ok := os.LookupEnv(n)
		if !ok || v == "" || getenv(n) != v {
			continue
		}
		kept[n] = strings.Clone(v)
	}
	if len(kept) == 0 {
		return getenv, nil
	}
	err = scrub(kept)
	for n := range kept {
		_ = os.Unsetenv(n)
	}
	return func(name string) string {
		if v, ok := kept[name]; ok {
			return v
		}
		return getenv(name)
	}, err
}
