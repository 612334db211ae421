package mcptest

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// NewServer returns a fresh demo server.
func NewServer() *mcpsdk.Server { return newServer(nil) }

// newServer returns a demo server whose wait tool also returns when
// release closes.
func newServer(release <-chan struct{}) *mcpsdk.Server {
	s := mcpsdk.NewServer(&mcpsdk.Implementation{Name: "demo", Version: "1.0.0"}, nil)
	type echoIn struct {
		Text string `json:"text" jsonschema:"the text to echo"`
	}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "echo", Description: "Echo the given text.",
		Annotations: &mcpsdk.ToolAnnotations{ReadOnlyHint: true, Title: "Echo"}},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in echoIn) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "echo: " + in.Text}}}, nil, nil
		})
	type addIn struct {
		A float64 `json:"a"`
		B float64 `json:"b"`
	}
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "add", Description: "Add two numbers."},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in addIn) (*mcpsdk.CallToolResult, any, error) {
			sum := in.A + in.B
			return &mcpsdk.CallToolResult{
				Content:           []mcpsdk.Content{&mcpsdk.TextContent{Text: fmt.Sprintf("%g", sum)}},
				StructuredContent: map[string]any{"sum": sum},
			}, nil, nil
		})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "fail", Description: "Always fails."},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in struct{}) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{IsError: true, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "image", Description: "Return a tiny image."},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in struct{}) (*mcpsdk.CallToolResult, any, error) {
			return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{
				&mcpsdk.ImageContent{MIMEType: "image/png", Data: onePixelPNG},
				&mcpsdk.TextContent{Text: "a single pixel"},
			}}, nil, nil
		})
	mcpsdk.AddTool(s, &mcpsdk.Tool{Name: "wait", Description: "Block until cancelled."},
		func(ctx context.Context, req *mcpsdk.CallToolRequest, in struct{}) (*mcpsdk.CallToolResult, any, error) {
			select {
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			case <-release:
				return nil, nil, errors.New("the server is shutting down")
			}
		})
	return s
}

var onePixelPNG = []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89\x00\x00\x00\rIDATx\x9cc\xf8\x0f\x00\x00\x01\x01\x00\x05\x18\xd8N\x00\x00\x00\x00IEND\xaeB`\x82")

// ServeStdio runs the demo server on this process's stdin/stdout until
// the client closes stdin. A test binary calls it from TestMain when it
// finds its re-exec marker in the environment.
func ServeStdio(ctx context.Context) error {
	return NewServer().Run(ctx, &mcpsdk.StdioTransport{})
}

// Handler serves the demo server over streamable HTTP (stateless, JSON
// responses, so no connection outlives its request).
func Handler() http.Handler { return handler(nil) }

func handler(release <-chan struct{}) http.Handler {
	srv := newServer(release)
	return mcpsdk.NewStreamableHTTPHandler(func(*http.Request) *mcpsdk.Server { return srv },
		&mcpsdk.StreamableHTTPOptions{Stateless: true, JSONResponse: true})
}

// HTTPServer serves demo servers on a loopback port: "/<name>" is a demo
// server for every name, and "/broken/<name>" answers every request with
// 503. Close stops it and waits for its goroutines.
type HTTPServer struct {
	URL     string // http://127.0.0.1:PORT
	srv     *http.Server
	ln      net.Listener
	wg      sync.WaitGroup
	release chan struct{}
	once    sync.Once
}

// StartHTTP listens on a random loopback port.
func StartHTTP() (*HTTPServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	release := make(chan struct{})
	demo := handler(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/broken/") {
			http.Error(w, "server unavailable", http.StatusServiceUnavailable)
			return
		}
		demo.ServeHTTP(w, r)
	})
	h := &HTTPServer{URL: "http://" + ln.Addr().String(), srv: &http.Server{Handler: mux}, ln: ln, release: release}
	h.wg.Go(func() { _ = h.srv.Serve(ln) })
	return h, nil
}

// Close stops the server, closing open connections.
func (h *HTTPServer) Close() error {
	h.once.Do(func() { close(h.release) })
	err := h.srv.Close()
	h.wg.Wait()
	return err
}
