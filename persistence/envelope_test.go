package persistence

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/acp-agent/acp-agent/agent/session"
)

// envelopeSeeds are canonical lines, near misses the fast path must leave
// to encoding/json, and invalid JSON.
var envelopeSeeds = []string{
	`{"type":"turn/start","seq":0,"time":5,"data":{"turn":1}}`,
	`{"type":"assistant/chunk","seq":12,"time":1764000000000,"data":{"turn":1,"step":1,"chunk":{"type":"text","text":"héllo \"q\" \\ \u00e9\n"}}}`,
	`{"type":"tool/result","seq":4,"time":6,"data":{"a":[1,2.5,-3e+7,true,false,null,{}]},"sourceEventSeqs":[3,1],"surfaceOp":"append"}`,
	`{"type":"user/message","seq":4,"time":6,"data":{},"sourceEventSeqs":[],"surfaceOp":{"op":"replace","start":0,"end":2}}`,
	`{"type":"vendor/y","seq":6,"time":6,"data":{},"ignorable":true}`,
	`{"type":"vendor/y","seq":6,"time":6,"data":{},"ignorable":false}`,
	` { "type" : "turn/end" , "seq" : 1 , "time" : 2 , "data" : [ ] } `,
	`{"Type":"turn/start","seq":0,"time":5,"data":{}}`,
	`{"type":"turn/start","type":"turn/end","seq":0,"time":5,"data":{}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":null}`,
	`{"type":null,"seq":null,"time":5,"data":1}`,
	`{"type":"t\u0041","seq":0,"time":5,"data":1}`,
	`{"type":"turn/start","seq":1.0,"time":5,"data":1}`,
	`{"type":"turn/start","seq":1e2,"time":5,"data":1}`,
	`{"type":"turn/start","seq":99999999999999999999,"time":5,"data":1}`,
	`{"type":"turn/start","seq":-0,"time":-7,"data":"x"}`,
	`{"type":"turn/start","seq":01,"time":5,"data":1}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{"a":"\x"}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{"a":"` + "\x01" + `"}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{"a":"\ud800"}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{"a":"` + "\xff\xfe" + `"}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{"a":1,}}`,
	`{"type":"turn/start","seq":0,"time":5,"data":[1 2]}`,
	`{"type":"turn/start","seq":0,"time":5,"data":{}} x`,
	`{"type":"turn/start","seq":0,"time":5,"data":{},"extra":1}`,
	`{"type":"turn/start","seq":0,"time":5,"data":-}`,
	`{"type":"turn/start","seq":0,"time":5,"data":1.}`,
	`{"type":"turn/start","seq":0,"time":5,"data":tru}`,
	`{"type":"turn/start","seq":0,"time":5,"ignorable":1,"data":{}}`,
	`{"type":"turn/start","seq":0,"time":5,"surfaceOp":"append ","data":{}}`,
	`{"type":"turn/start","seq":0,"time":5,"sourceEventSeqs":[1,],"data":{}}`,
	`{}`, `[]`, `null`, `"x"`, ``, `{`, `{"type"`, `{"type":`, `{"type":"a"`,
	`{"data":` + strings.Repeat("[", 600) + strings.Repeat("]", 600) + `}`,
	`{"data":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`,
}

// FuzzDecodeEnvelope checks that decodeEnvelope is exactly json.Unmarshal
// into a session.Event: the same success or failure, the same event.
//
// Run: go test ./persistence -run '^$' -fuzz FuzzDecodeEnvelope -fuzztime 60s
func FuzzDecodeEnvelope(f *testing.F) {
	for _, s := range envelopeSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		checkEnvelope(t, line)
	})
}

func checkEnvelope(t *testing.T, line []byte) {
	t.Helper()
	var want session.Event
	werr := json.Unmarshal(line, &want)
	got, gerr := decodeEnvelope(append([]byte(nil), line...))
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%q: encoding/json err %v, decodeEnvelope err %v", line, werr, gerr)
	}
	if werr == nil && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\n got %#v\nwant %#v", line, got, want)
	}
}

func TestDecodeEnvelopeMatchesEncodingJSON(t *testing.T) {
	for _, s := range envelopeSeeds {
		checkEnvelope(t, []byte(s))
	}
	// Every event shape our writer produces takes the fast path.
	for _, ev := range typicalEvents() {
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := fastEnvelope(b); !ok {
			t.Errorf("writer's line takes the slow path: %s", b)
		}
	}
}
