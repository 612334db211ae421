package openai

// This file defines provider routes, the Config struct and how API keys are
// resolved from the environment.

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/acp-agent/acp-agent/agent/model"
)

// Provider names accepted in --model PROVIDER/MODEL.
const (
	ProviderDeepSeek   = "deepseek"
	ProviderOpenAI     = "openai"
	ProviderCompatible = "openai-compatible"
)

// Default endpoints and key variables of the built-in providers.
const (
	DeepSeekBaseURL = "https://api.deepseek.com"
	OpenAIBaseURL   = "https://api.openai.com/v1/"
	EnvDeepSeekKey  = "DEEPSEEK_API_KEY"
	EnvOpenAIKey    = "OPENAI_API_KEY"
)

// Retry defaults; see Config.
const (
	DefaultMaxRetries    = 3 // four attempts in all
	DefaultRetryBase     = 500 * time.Millisecond
	DefaultMaxRetryDelay = 60 * time.Second
)

// Configuration errors. They are returned wrapped, with the provider and
// variable named in the message; test with errors.Is.
var (
	ErrInvalidModelFlag = errors.New("openai: invalid --model value")
	ErrUnknownProvider  = errors.New("openai: unknown provider")
	ErrMissingModel     = errors.New("openai: missing model id")
	ErrMissingKey       = errors.New("openai: missing API key")
	ErrMissingBaseURL   = errors.New("openai: missing base URL")
	ErrInvalidBaseURL   = errors.New("openai: invalid base URL")
)

// ParseModelFlag parses the --model value PROVIDER/MODEL, for example
// "deepseek/deepseek-chat", "openai/gpt-4.1" or "openai-compatible/llama3".
// Everything after the first slash is the model id, so ids that contain
// slashes ("openai-compatible/meta-llama/Llama-3.1-8B") are kept whole. The
// "script:PATH" form belongs to the scripted model and is rejected here.
func ParseModelFlag(s string) (model.Route, error) {
	provider, id, ok := strings.Cut(s, "/")
	if !ok || id == "" || strings.TrimSpace(s) != s {
		return model.Route{}, model.ConfigErrorf(ErrInvalidModelFlag, "invalid --model value %q: want PROVIDER/MODEL, for example deepseek/deepseek-chat, openai/gpt-4.1 or openai-compatible/NAME", s)
	}
	switch provider {
	case ProviderDeepSeek, ProviderOpenAI, ProviderCompatible:
		return model.Route{Provider: provider, Model: id}, nil
	}
	return model.Route{}, model.ConfigErrorf(ErrInvalidModelFlag, "invalid --model value %q: unknown provider %q (want %s, %s or %s)", s, provider, ProviderDeepSeek, ProviderOpenAI, ProviderCompatible)
}

// Config configures one provider. The zero values of the optional fields
// select the documented defaults.
type Config struct {
	// Provider is ProviderDeepSeek, ProviderOpenAI or ProviderCompatible.
	Provider string
	// Model is the default model id; a request's Route.Model overrides it.
	Model string
	// BaseURL overrides the provider's endpoint. Required for
	// ProviderCompatible (the --base-url flag).
	BaseURL string
	// APIKey is the key itself. When empty, New reads the variable named by
	// APIKeyEnv, or the provider's usual variable (DEEPSEEK_API_KEY,
	// OPENAI_API_KEY). It is never logged: Config implements slog.LogValuer
	// and fmt.Stringer with the key redacted.
	APIKey string
	// APIKeyEnv names the environment variable holding the key (the
	// --api-key-env flag). For ProviderCompatible a key is optional and only
	// read from this variable.
	APIKeyEnv string
	// MaxRetries bounds the re-sends after the first attempt for 429, 5xx
	// and connection failures. 0 selects DefaultMaxRetries (four attempts
	// in all); a negative value disables retries.
	MaxRetries int
	// RetryBase is the first backoff delay, doubled on each retry (with
	// jitter) when the server sends no Retry-After. 0 selects
	// DefaultRetryBase; tests set it tiny.
	RetryBase time.Duration
	// MaxRetryDelay caps the backoff. A Retry-After above it ends the
	// retries at once instead of waiting that long. 0 selects
	// DefaultMaxRetryDelay.
	MaxRetryDelay time.Duration
	// IdleTimeout ends an attempt when the provider sends no byte for this
	// long, before the response or mid-stream; the attempt is retried like a
	// connection failure while nothing was delivered. 0 selects
	// DefaultIdleTimeout; a negative value disables it.
	IdleTimeout time.Duration
	// HTTPClient carries the requests. nil selects a client with its own
	// clone of http.DefaultTransport and no overall timeout (streams are
	// long; the request context bounds them).
	HTTPClient *http.Client
	// Getenv reads the environment; nil selects os.Getenv.
	Getenv func(string) string
	// Logger receives retry warnings and per-request debug records; nil
	// discards them.
	Logger *slog.Logger
}

// ConfigFromFlags builds a Config from the command-line flags --model,
// --base-url and --api-key-env. The key itself is resolved by New.
func ConfigFromFlags(modelFlag, baseURL, apiKeyEnv string) (Config, error) {
	r, err := ParseModelFlag(modelFlag)
	if err != nil {
		return Config{}, err
	}
	cfg := Config{Provider: r.Provider, Model: r.Model, BaseURL: baseURL, APIKeyEnv: apiKeyEnv}
	if _, err := cfg.baseURL(); err != nil {
		return Config{}, err
	}
	return cfg, nil
}

// LogValue implements slog.LogValuer. The key is replaced by "[redacted]"
// (or "[unset]") so a Config can be logged whole.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", c.Provider),
		slog.String("model", c.Model),
		slog.String("base_url", c.BaseURL),
		slog.String("api_key_env", c.APIKeyEnv),
		slog.String("api_key", redact(c.APIKey)),
		slog.Int("max_retries", c.MaxRetries),
	)
}

// String implements fmt.Stringer with the key redacted, so that %v and %+v
// never print it.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{Provider:%q Model:%q BaseURL:%q APIKeyEnv:%q APIKey:%s}",
		c.Provider, c.Model, c.BaseURL, c.APIKeyEnv, redact(c.APIKey))
}

// GoString implements fmt.GoStringer so that %#v redacts the key too.
func (c Config) GoString() string { return c.String() }

func redact(key string) string {
	if key == "" {
		return "[unset]"
	}
	return "[redacted]"
}

// keyEnv returns the variable the key is read from, or "" if none.
func (c Config) keyEnv() string {
	if c.APIKeyEnv != "" {
		return c.APIKeyEnv
	}
	switch c.Provider {
	case ProviderDeepSeek:
		return EnvDeepSeekKey
	case ProviderOpenAI:
		return EnvOpenAIKey
	}
	return ""
}

// resolveKey returns the API key. deepseek and openai require one; for
// openai-compatible a key is read only when --api-key-env names a variable,
// and that variable must then be set.
func (c Config) resolveKey() (string, error) {
	if c.APIKey != "" {
		return c.APIKey, nil
	}
	env := c.keyEnv()
	if env == "" {
		return "", nil
	}
	getenv := c.Getenv
	if getenv == nil {
		getenv = osGetenv
	}
	if k := getenv(env); k != "" {
		return k, nil
	}
	return "", &model.MissingKeyError{Provider: c.Provider, EnvVar: env, Err: ErrMissingKey}
}

// baseURL returns the endpoint to use, validating overrides.
func (c Config) baseURL() (string, error) {
	if c.BaseURL == "" {
		switch c.Provider {
		case ProviderDeepSeek:
			return DeepSeekBaseURL, nil
		case ProviderOpenAI:
			return OpenAIBaseURL, nil
		}
		return "", model.ConfigErrorf(ErrMissingBaseURL, "provider %s needs --base-url (for example http://localhost:11434/v1)", c.Provider)
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", model.ConfigErrorf(ErrInvalidBaseURL, "invalid --base-url %q: want an http or https URL", c.BaseURL)
	}
	return c.BaseURL, nil
}

func (c Config) withDefaults() Config {
	switch {
	case c.MaxRetries == 0:
		c.MaxRetries = DefaultMaxRetries
	case c.MaxRetries < 0:
		c.MaxRetries = 0
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.MaxRetryDelay <= 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	switch {
	case c.IdleTimeout == 0:
		c.IdleTimeout = DefaultIdleTimeout
	case c.IdleTimeout < 0:
		c.IdleTimeout = 0
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Getenv == nil {
		c.Getenv = osGetenv
	}
	return c
}
