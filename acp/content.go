package acp

// This file defines the mapping between ACP content blocks and the log's
// content blocks, in both directions.

import (
	"strconv"
	"strings"

	acpsdk "github.com/coder/acp-go-sdk"

	"github.com/acp-agent/acp-agent/agent/session"
)

// DefaultMaxPromptBytes bounds the text a single prompt may carry. A prompt
// this large could not fit any model's context window anyway, and refusing
// it keeps the session log from growing by megabytes per request.
const DefaultMaxPromptBytes = 1 << 20

// promptBlocks converts an ACP prompt into log content blocks. Text,
// resource_link, embedded text resources (with the line range of a
// selection) and, when images is set, images are accepted (that is what
// initialize advertises); other images, audio, blob resources and an
// empty prompt are invalid params.
func promptBlocks(prompt []acpsdk.ContentBlock, maxBytes int, images bool) ([]session.Block, error) {
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
			b.StartLine, b.EndLine = lineRange(r.Uri)
		case cb.Resource != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: binary (blob) embedded resources are not supported", i)
		case cb.Image != nil && images:
			if cb.Image.Data == "" || !strings.HasPrefix(cb.Image.MimeType, "image/") {
				return nil, errorf(CodeInvalidParams, "prompt block %d: an image needs base64 data and an image/* mimeType", i)
			}
			b = session.Block{Type: session.BlockImage, MimeType: cb.Image.MimeType, Data: cb.Image.Data}
			if cb.Image.Uri != nil {
				b.URI = *cb.Image.Uri
			}
		case cb.Image != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: image content is not supported: the session's model does not take image input (choose a model that does, or describe the image in text)", i)
		case cb.Audio != nil:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: audio content is not supported (promptCapabilities.audio is false)", i)
		default:
			return nil, errorf(CodeUnsupportedContent, "prompt block %d: unknown content type", i)
		}
		size += len(b.Text) + len(b.URI) + len(b.Name) + len(b.Data)
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
	case session.BlockImage:
		cb := acpsdk.ImageBlock(b.Data, b.MimeType)
		if b.URI != "" {
			cb.Image.Uri = acpsdk.Ptr(b.URI)
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

// lineRange reads a selection's lines from a resource URI's fragment, the
// form editors use for selections: "#L12", "#L12-20", "#L12:20" or
// "#L12-L20" (1-based, inclusive). Anything else is no range.
func lineRange(uri string) (start, end int) {
	_, frag, ok := strings.Cut(uri, "#")
	if !ok {
		return 0, 0
	}
	frag, ok = strings.CutPrefix(frag, "L")
	if !ok {
		return 0, 0
	}
	a, b, two := strings.Cut(frag, "-")
	if !two {
		a, b, two = strings.Cut(frag, ":")
	}
	start, err := strconv.Atoi(a)
	if err != nil || start < 1 {
		return 0, 0
	}
	if !two {
		return start, start
	}
	end, err = strconv.Atoi(strings.TrimPrefix(b, "L"))
	if err != nil || end < start {
		return 0, 0
	}
	return start, end
}
