package anthropic

import (
	"context"
	"iter"
	"log/slog"
	"net/http"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/anthropics/anthropic-sdk-go/v2/option"

	"github.com/acp-agent/acp-agent/agent/model"
	"github.com/acp-agent/acp-agent/agent/session"
)

// Model is the Anthropic model.Model. It is safe for concurrent use.
type Model struct {
	cfg    Config
	keyEnv string
	log    *slog.Logger
	svc    sdk.MessageService
}

var (
	_ model.Model          = (*Model)(nil)
	_ model.ImageInput     = (*Model)(nil)
	_ model.ThinkingSwitch = (*Model)(nil)
)

// New validates cfg and resolves the key: a missing key or model fails
// here, at start-up, not at the first prompt.
func New(cfg Config) (*Model, error) {
	cfg = cfg.withDefaults()
	if cfg.Model == "" {
		return nil, ErrMissingModel
	}
	if b := cfg.ThinkingBudget; b > 0 && (b < MinThinkingBudget || b >= cfg.MaxTokens) {
		// The API refuses a budget under its minimum and one not below
		// max_tokens; say so instead of dropping thinking without a word.
		return nil, model.ConfigErrorf(ErrBadThinkingBudget, "thinking budget %d tokens: want at least %d and less than the max tokens of a request (%d)", b, MinThinkingBudget, cfg.MaxTokens)
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
		hc = &http.Client{}
		if t, ok := http.DefaultTransport.(*http.Transport); ok {
			hc.Transport = t.Clone()
		}
	}
	// Our options only: sdk.NewClient would read ANTHROPIC_BASE_URL and
	// friends from the environment. Retries are ours (retry.go).
	svc := sdk.NewMessageService(
		option.WithHTTPClient(hc),
		option.WithBaseURL(base),
		option.WithMaxRetries(0),
		option.WithAPIKey(key),
	)
	return &Model{cfg: cfg, keyEnv: cfg.keyEnv(), log: cfg.Logger.With("provider", Provider), svc: svc}, nil
}

// AcceptsImages implements model.ImageInput: Claude models take images.
func (m *Model) AcceptsImages() bool { return true }

// SwitchesThinking implements model.ThinkingSwitch: with a thinking
// budget configured, a request with NoThinking goes without extended
// thinking.
func (m *Model) SwitchesThinking() bool { return m.cfg.ThinkingBudget > 0 }

// Stream implements model.Model. Route.Model, when set, overrides the
// configured model id.
func (m *Model) Stream(ctx context.Context, req model.Request) iter.Seq2[session.Chunk, error] {
	return func(yield func(session.Chunk, error) bool) {
		modelID := req.Route.Model
		if modelID == "" {
			modelID = m.cfg.Model
		}
		m.stream(ctx, modelID, req, yield)
	}
}
