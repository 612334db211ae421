package anthropic

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

// Provider is the provider name in --model anthropic/MODEL.
const Provider = "anthropic"

// Defaults.
const (
	DefaultBaseURL       = "https://api.anthropic.com/"
	EnvAPIKey            = "ANTHROPIC_API_KEY"
	DefaultMaxTokens     = 16384
	DefaultMaxRetries    = 3
	DefaultRetryBase     = 500 * time.Millisecond
	DefaultMaxRetryDelay = 60 * time.Second
)

// Configuration errors, returned wrapped; test with errors.Is.
var (
	ErrMissingModel   = errors.New("anthropic: missing model id")
	ErrMissingKey     = errors.New("anthropic: missing API key")
	ErrInvalidBaseURL = errors.New("anthropic: invalid base URL")
	// ErrBadThinkingBudget: ThinkingBudget is outside what the API takes.
	ErrBadThinkingBudget = errors.New("anthropic: invalid thinking budget")
)

// MinThinkingBudget is the smallest thinking budget the API accepts.
const MinThinkingBudget = 1024

// Config configures the provider. Zero values select the defaults.
type Config struct {
	// Model is the default model id; a request's Route.Model overrides it.
	Model   string
	BaseURL string
	// APIKey is the key itself; when empty it is read from APIKeyEnv, or
	// ANTHROPIC_API_KEY. It is never logged (LogValue, String redact it).
	APIKey    string
	APIKeyEnv string
	// MaxTokens is sent when the request sets none (the API requires
	// max_tokens); 0 means DefaultMaxTokens.
	MaxTokens int
	// ThinkingBudget > 0 turns extended thinking on with that budget of
	// tokens (it must stay below the max tokens of a request).
	ThinkingBudget int
	// MaxRetries, RetryBase and MaxRetryDelay: as in the OpenAI-compatible
	// provider (negative MaxRetries disables retries).
	MaxRetries    int
	RetryBase     time.Duration
	MaxRetryDelay time.Duration
	// IdleTimeout ends an attempt after this long without a byte from the
	// provider (0 means DefaultIdleTimeout, negative disables).
	IdleTimeout time.Duration
	HTTPClient  *http.Client
	Getenv      func(string) string
	Logger      *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.MaxTokens <= 0 {
		c.MaxTokens = DefaultMaxTokens
	}
	if c.MaxRetries == 0 {
		c.MaxRetries = DefaultMaxRetries
	} else if c.MaxRetries < 0 {
		c.MaxRetries = 0
	}
	if c.RetryBase <= 0 {
		c.RetryBase = DefaultRetryBase
	}
	if c.MaxRetryDelay <= 0 {
		c.MaxRetryDelay = DefaultMaxRetryDelay
	}
	if c.IdleTimeout == 0 {
		c.IdleTimeout = DefaultIdleTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Getenv == nil {
		c.Getenv = func(string) string { return "" }
	}
	return c
}

func (c Config) keyEnv() string {
	if c.APIKeyEnv != "" {
		return c.APIKeyEnv
	}
	return EnvAPIKey
}

func (c Config) resolveKey() (string, error) {
	if c.APIKey != "" {
		return c.APIKey, nil
	}
	if k := strings.TrimSpace(c.Getenv(c.keyEnv())); k != "" {
		return k, nil
	}
	// The shared shape lets the agent start and offer the env_var auth
	// method instead of exiting.
	return "", &model.MissingKeyError{Provider: Provider, EnvVar: c.keyEnv(), Err: ErrMissingKey}
}

func (c Config) baseURL() (string, error) {
	if c.BaseURL == "" {
		return DefaultBaseURL, nil
	}
	u, err := url.Parse(c.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%w %q: want http(s)://host[/path]", ErrInvalidBaseURL, c.BaseURL)
	}
	if !strings.HasSuffix(c.BaseURL, "/") {
		return c.BaseURL + "/", nil
	}
	return c.BaseURL, nil
}

// LogValue implements slog.LogValuer with the key redacted.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(
		slog.String("provider", Provider),
		slog.String("model", c.Model),
		slog.String("base_url", c.BaseURL),
		slog.String("api_key_env", c.APIKeyEnv),
		slog.String("api_key", redact(c.APIKey)),
	)
}

// String implements fmt.Stringer with the key redacted.
func (c Config) String() string {
	return fmt.Sprintf("anthropic.Config{Model:%q BaseURL:%q APIKeyEnv:%q APIKey:%s}", c.Model, c.BaseURL, c.APIKeyEnv, redact(c.APIKey))
}

// GoString redacts the key for %#v too.
func (c Config) GoString() string { return c.String() }

func redact(key string) string {
	if key == "" {
		return "[unset]"
	}
	return "[redacted]"
}
