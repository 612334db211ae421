package openai

// This file defines the Model type: construction, route selection and the
// per-provider client.

import (
	"context"
	"iter"
	"log/slog"
	"net/http"
	"sync"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
	"github.com/acp-agent/acp-agent/internal/errcode"
)

// Model is a model.Model speaking the chat-completions wire format. It is
// safe for concurrent use by many sessions.
type Model struct {
	own *client
	// base is the validated configuration; clients for other providers
	// named by a request's Route are derived from it (same HTTP client,
	// retry policy, environment and logger).
	base Config

	mu sync.Mutex
	// others caches the clients (or construction errors) for providers
	// other than own, keyed by provider name.
	others map[string]clientOrErr
}

type clientOrErr struct {
	c   *client
	err error
}

var (
	_ model.Model          = (*Model)(nil)
	_ model.ThinkingSwitch = (*Model)(nil)
)

// SwitchesThinking implements model.ThinkingSwitch: true for the
// configured model when it is one of OpenAI's reasoning models whose
// reasoning a request can turn off (offEffort).
func (m *Model) SwitchesThinking() bool { return offEffort(m.own.provider, m.own.model) != "" }

// New validates cfg, resolves the API key and returns the model. Missing
// keys (deepseek, openai), a missing base URL (openai-compatible) and
// unknown providers are reported here, before any request is made.
func New(cfg Config) (model.Model, error) {
	cfg = cfg.withDefaults()
	c, err := newClient(cfg)
	if err != nil {
		return nil, err
	}
	return &Model{own: c, base: cfg, others: map[string]clientOrErr{}}, nil
}

// Stream implements model.Model. The request's Route selects the model id
// (Route.Model) and, when Route.Provider names another provider, a client
// for that provider built from the same Config with that provider's default
// endpoint and key variable. openai-compatible routes other than our own
// cannot be served (their base URL is unknown) and fail with CodeRoute.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		c, err := m.pick(req.Route)
		if err != nil {
			yield(session.Chunk{}, err)
			return
		}
		modelID := req.Route.Model
		if modelID == "" {
			modelID = c.model
		}
		c.stream(ctx, modelID, req, yield)
	}
}

func (m *Model) pick(r model.Route) (*client, error) {
	if r.Provider == "" || r.Provider == m.own.provider {
		return m.own, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if ce, ok := m.others[r.Provider]; ok {
		return ce.c, ce.err
	}
	var ce clientOrErr
	switch r.Provider {
	case ProviderDeepSeek, ProviderOpenAI:
		cfg := m.base
		cfg.Provider, cfg.Model, cfg.BaseURL, cfg.APIKey, cfg.APIKeyEnv = r.Provider, r.Model, "", "", ""
		ce.c, ce.err = newClient(cfg)
		if ce.err != nil {
			ce.err = &ProviderError{Provider: r.Provider, Coded: errcode.Coded[Code]{Code: CodeRoute, Err: ce.err, Message: ce.err.Error()}}
		}
	default:
		ce.err = errRoute(r.Provider, "this agent is configured for %s and cannot serve provider %q", m.own.provider, r.Provider)
	}
	m.others[r.Provider] = ce
	return ce.c, ce.err
}

// client is one configured provider endpoint. It is immutable.
type client struct {
	provider string
	model    string
	keyEnv   string
	cfg      Config
	log      *slog.Logger
	svc      oai.ChatCompletionService
}

func newClient(cfg Config) (*client, error) {
	switch cfg.Provider {
	case ProviderDeepSeek, ProviderOpenAI, ProviderCompatible:
	default:
		return nil, model.ConfigErrorf(ErrUnknownProvider, "unknown provider %q (want %s, %s or %s)", cfg.Provider, ProviderDeepSeek, ProviderOpenAI, ProviderCompatible)
	}
	if cfg.Model == "" {
		return nil, model.ConfigErrorf(ErrMissingModel, "missing model id for provider %s", cfg.Provider)
	}
	base, err := cfg.baseURL()
	if err != nil {
		return nil, err
	}
	key, err := cfg.resolveKey()
	if err != nil {
		return nil, err
	}
	hc := cfg.HTTPClient
	if hc == nil {
		hc = defaultHTTPClient()
	}
	// The service is built from our options only: openai.NewClient would
	// also read OPENAI_API_KEY, OPENAI_BASE_URL and friends from the
	// environment, which could send an OpenAI key to a DeepSeek or local
	// endpoint. Retries are ours (see retry.go), so the SDK's are off.
	opts := []option.RequestOption{
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
	}
	if key != "" {
		opts = append(opts, option.WithAPIKey(key))
	}
	return &client{
		provider: cfg.Provider,
		model:    cfg.Model,
		keyEnv:   cfg.keyEnv(),
		cfg:      cfg,
		log:      cfg.Logger.With("provider", cfg.Provider),
		svc:      oai.NewChatCompletionService(opts...),
	}, nil
}

// defaultHTTPClient has no overall timeout: a stream lives as long as the
// model talks, and the request context bounds it.
func defaultHTTPClient() *http.Client {
	if t, ok := http.DefaultTransport.(*http.Transport); ok {
		return &http.Client{Transport: t.Clone()}
	}
	return &http.Client{}
}
