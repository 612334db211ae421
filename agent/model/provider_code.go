package model

// ProviderCode classifies a failed call to a model provider. Every
// provider package (openai, anthropic) reports these same spellings, so
// callers branch on one set of codes whatever the provider; they are
// stable and may be shown to users.
type ProviderCode string

// Provider failure codes.
const (
	// ProviderAuth: HTTP 401 or 403, the key is missing or was rejected.
	ProviderAuth ProviderCode = "PROVIDER_AUTH"
	// ProviderRateLimited: HTTP 429 after the retries were used up.
	ProviderRateLimited ProviderCode = "PROVIDER_RATE_LIMITED"
	// ProviderUnavailable: HTTP 5xx (or overloaded) after the retries
	// were used up.
	ProviderUnavailable ProviderCode = "PROVIDER_UNAVAILABLE"
	// ProviderRejected: any other non-2xx status (bad request, unknown
	// model, ...).
	ProviderRejected ProviderCode = "PROVIDER_REJECTED"
	// ProviderTransport: no HTTP response (connection refused, reset,
	// DNS) after the retries were used up.
	ProviderTransport ProviderCode = "PROVIDER_TRANSPORT"
	// ProviderStreamCut: the response stream broke or ended before the
	// model reported a finish reason. The chunks before the cut were
	// delivered.
	ProviderStreamCut ProviderCode = "PROVIDER_STREAM_CUT"
	// ProviderStreamError: the stream carried an in-band error event or a
	// chunk that is not valid JSON.
	ProviderStreamError ProviderCode = "PROVIDER_STREAM_ERROR"
	// ProviderIdleTimeout: the provider sent no byte for the idle timeout
	// (before the response or mid-stream).
	ProviderIdleTimeout ProviderCode = "PROVIDER_IDLE_TIMEOUT"
	// ProviderContextLength: the request does not fit the model's context
	// window (context_length_exceeded).
	ProviderContextLength ProviderCode = "PROVIDER_CONTEXT_LENGTH"
	// ProviderRoute: the request named a route this model cannot serve.
	ProviderRoute ProviderCode = "PROVIDER_ROUTE"
)
