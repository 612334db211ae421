package acp

// This file defines the mapping between ACP content blocks and the log's
// content blocks, in both directions.

import (
	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// DefaultMaxPromptBytes bounds the text a single prompt may carry. A prompt
// this large could not fit any model's context window anyway, and refusing
// it keeps the session log from growing by megabytes per request.
const DefaultMaxPromptBytes = 1 << 20

// promptBlocks converts an ACP prompt into log content blocks. Text,
// resource_link and embedded text resources are accepted (that is what
// initialize advertises); images, audio, blob resources and an empty prompt
// are invalid params.
func promptBlocks(prompt []acpsdk.ContentBlock, maxBytes int) ([]session.Block, error) {
	if len(prompt) == 0 {
		return nil, errorf(CodeInvalidParams, "empty prompt")
	}
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPromptBytes
	}
	out := make([]session.Block, 0, len(prompt))
	size := 0
	for i, cb := range prompt {
		var b session.Block
		switch {
		case cb.Text != nil:
			b = session.Text(cb.Text.Text)
		case cb.ResourceLink != nil:
			rl := cb.ResourceLink
			b = session.Block{Type: session.BlockResourceLink, URI: rl.Uri, Name: rl.Name}
			if rl.MimeType != nil {
				b.MimeType = *rl.MimeType
			}
		case cb.Resource != nil && cb.Resource.Resource.TextResourceContents != nil:
			r := cb.Resource.Resource.TextResourceContents
			b = session.Block{Type: session.BlockResource, URI: r.Uri, Text: r.Text}
			if r.MimeType != nil {
				b.MimeType = *r.MimeType
			}
		case cb.Resource != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: binary (blob) embedded resources are not supported", i)
		case cb.Image != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: image content is not supported (promptCapabilities.image is false)", i)
		case cb.Audio != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: audio content is not supported (promptCapabilities.audio is false)", i)
		default:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: unknown content type", i)
		}
		size += len(b.Text) + len(b.URI) + len(b.Name)
		if size > maxBytes {
			return nil, errorf(CodeInvalidParams, "prompt is too large: more than %d bytes of content", maxBytes)
		}
		out = append(out, b)
	}
	return out, nil
}

// contentBlock converts one log block into an ACP content block for
// display. Blocks with no display form (tool calls and results, reasoning
// is shown through thought chunks instead) return ok=false.
func contentBlock(b session.Block) (acpsdk.ContentBlock, bool) {
	switch b.Type {
	case session.BlockText:
		return acpsdk.TextBlock(b.Text), true
	case session.BlockResourceLink:
		name := b.Name
		if name == "" {
			name = b.URI
		}
		cb := acpsdk.ResourceLinkBlock(name, b.URI)
		if b.MimeType != "" {
			cb.ResourceLink.MimeType = acpsdk.Ptr(b.MimeType)
		}
		return cb, true
	case session.BlockResource:
		res := &acpsdk.TextResourceContents{Uri: b.URI, Text: b.Text}
		if b.MimeType != "" {
			res.MimeType = acpsdk.Ptr(b.MimeType)
		}
		return acpsdk.ResourceBlock(acpsdk.EmbeddedResourceResource{TextResourceContents: res}), true
	}
	return acpsdk.ContentBlock{}, false
}
