package transport

import (
	"encoding/json"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deskco/rfqdesk/machine"
	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

// machineEventTypes reads the values of every exported constant named Ev… in the machine
// package's source, so that an event type added there is seen here without a list to keep.
func machineEventTypes(t *testing.T) []string {
	t.Helper()
	pkg, err := build.ImportDir("../machine", 0) // the files of the default build, without tests
	if err != nil {
		t.Fatalf("machine package: %v", err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range pkg.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(pkg.Dir, name), nil, 0)
		if err != nil {
			t.Fatalf("parse machine: %v", err)
		}
		files = append(files, f)
	}
	var types []string
	for _, f := range files {
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !strings.HasPrefix(name.Name, "Ev") || !name.IsExported() || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						t.Fatalf("machine.%s is not a string literal; this test reads event types from literals", name.Name)
					}
					v, err := strconv.Unquote(lit.Value)
					if err != nil {
						t.Fatalf("machine.%s: %v", name.Name, err)
					}
					types = append(types, v)
				}
			}
		}
	}
	sort.Strings(types)
	return types
}

// asyncAPIDoc is the part of docs/asyncapi.yaml the tests read.
type asyncAPIDoc struct {
	AsyncAPI string `yaml:"asyncapi"`
	Channels map[string]struct {
		Address    string                       `yaml:"address"`
		Messages   map[string]map[string]string `yaml:"messages"`
		CloseCodes []struct {
			Code int `yaml:"code"`
		} `yaml:"x-close-codes"`
		PingSeconds int `yaml:"x-ping-interval-seconds"`
		Bindings    struct {
			WS struct {
				Headers struct {
					Required   []string       `yaml:"required"`
					Properties map[string]any `yaml:"properties"`
				} `yaml:"headers"`
				Query struct {
					Properties map[string]any `yaml:"properties"`
				} `yaml:"query"`
			} `yaml:"ws"`
		} `yaml:"bindings"`
	} `yaml:"channels"`
	Operations map[string]struct {
		Action   string              `yaml:"action"`
		Messages []map[string]string `yaml:"messages"`
	} `yaml:"operations"`
	Components struct {
		Messages map[string]struct {
			Name    string `yaml:"name"`
			Payload struct {
				Properties struct {
					Type struct {
						Const string `yaml:"const"`
					} `yaml:"type"`
				} `yaml:"properties"`
			} `yaml:"payload"`
		} `yaml:"messages"`
	} `yaml:"components"`
}

func readAsyncAPI(t *testing.T) asyncAPIDoc {
	t.Helper()
	b, err := os.ReadFile("../docs/asyncapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var doc asyncAPIDoc
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("docs/asyncapi.yaml: %v", err)
	}
	if doc.AsyncAPI != "3.0.0" {
		t.Fatalf("asyncapi: %q, want 3.0.0", doc.AsyncAPI)
	}
	return doc
}

// TestAsyncAPIListsEveryEventType: the stream channel of docs/asyncapi.yaml carries exactly
// one message per event type the machine emits (machine's Ev… constants): none missing, none
// the machine no longer has, each named by its type and with its frame's type fixed to it.
func TestAsyncAPIListsEveryEventType(t *testing.T) {
	emitted := machineEventTypes(t)
	if len(emitted) == 0 || !slices.Contains(emitted, machine.EvRfqCreated) || !slices.Contains(emitted, machine.EvResync) {
		t.Fatalf("read %v from machine/: the constant scan is broken", emitted)
	}
	doc := readAsyncAPI(t)
	ch, ok := doc.Channels["makerStream"]
	if !ok || ch.Address != "/maker/stream" {
		t.Fatalf("no makerStream channel at /maker/stream")
	}
	var documented []string
	for key, ref := range ch.Messages {
		name, ok := strings.CutPrefix(ref["$ref"], "#/components/messages/")
		if !ok {
			t.Errorf("channel message %s: $ref %q is not a components message", key, ref["$ref"])
			continue
		}
		msg, ok := doc.Components.Messages[name]
		if !ok {
			t.Errorf("channel message %s: %s is not in components.messages", key, name)
			continue
		}
		if msg.Name != msg.Payload.Properties.Type.Const {
			t.Errorf("message %s: name %q but the frame's type is %q", name, msg.Name, msg.Payload.Properties.Type.Const)
		}
		documented = append(documented, msg.Payload.Properties.Type.Const)
	}
	sort.Strings(documented)
	if diff := cmp.Diff(emitted, documented); diff != "" {
		t.Errorf("event types (-machine +docs/asyncapi.yaml):\n%s", diff)
	}
	op, ok := doc.Operations["sendEvents"]
	if !ok || op.Action != "send" {
		t.Fatalf("no send operation sendEvents")
	}
	var sent []string
	for _, ref := range op.Messages {
		sent = append(sent, strings.TrimPrefix(ref["$ref"], "#/channels/makerStream/messages/"))
	}
	var keys []string
	for key := range ch.Messages {
		keys = append(keys, key)
	}
	sort.Strings(sent)
	sort.Strings(keys)
	if diff := cmp.Diff(keys, sent); diff != "" {
		t.Errorf("messages (-channel +operation sendEvents):\n%s", diff)
	}
}

// TestAsyncAPIStreamContract: the close codes the desk sends, the heartbeat and the key
// header of docs/asyncapi.yaml are those of the code.
func TestAsyncAPIStreamContract(t *testing.T) {
	ch := readAsyncAPI(t).Channels["makerStream"]
	var codes []int
	for _, c := range ch.CloseCodes {
		codes = append(codes, c.Code)
	}
	for _, want := range []int{machine.CloseUnauthorized, machine.CloseRestart, CloseGoingAway, ClosePolicy, CloseInternal, CloseTryAgain} {
		if !slices.Contains(codes, want) {
			t.Errorf("close code %d not in x-close-codes %v", want, codes)
		}
	}
	if got := time.Duration(ch.PingSeconds) * time.Second; got != DefaultPingInterval {
		t.Errorf("x-ping-interval-seconds: %v, the desk pings every %v", got, DefaultPingInterval)
	}
	// The key header or the ticket parameter (streamticket.go): neither is required alone.
	if ws := ch.Bindings.WS; len(ws.Headers.Required) != 0 || ws.Headers.Properties["X-API-Key"] == nil || ws.Query.Properties[ticketParam] == nil {
		t.Errorf("upgrade: required headers %v, X-API-Key and %s documented: %v %v; want the header or the parameter, neither required",
			ws.Headers.Required, ticketParam, ws.Headers.Properties["X-API-Key"] != nil, ws.Query.Properties[ticketParam] != nil)
	}
}

// streamPayloads is the Go type of each event's payload as the machine emits it.
var streamPayloads = map[string]reflect.Type{
	machine.EvRfqCreated:      reflect.TypeFor[machine.RfqDTO](),
	machine.EvRfqClosed:       reflect.TypeFor[machine.RfqIDPayload](),
	machine.EvRfqExpired:      reflect.TypeFor[machine.RfqIDPayload](),
	machine.EvQuoteCreated:    reflect.TypeFor[machine.QuoteDTO](),
	machine.EvQuoteStatus:     reflect.TypeFor[machine.QuoteStatusPayload](),
	machine.EvQuoteDeclined:   reflect.TypeFor[machine.QuoteDeclinedPayload](),
	machine.EvQuoteAnchored:   reflect.TypeFor[machine.QuoteAnchoredPayload](),
	machine.EvTradeStep:       reflect.TypeFor[machine.TradeStepPayload](),
	machine.EvTradeSettled:    reflect.TypeFor[machine.TradeDTO](),
	machine.EvTradeFailed:     reflect.TypeFor[machine.TradeFailedPayload](),
	machine.EvSignRequested:   reflect.TypeFor[machine.SignActionDTO](),
	machine.EvSignCompleted:   reflect.TypeFor[machine.ActionIDPayload](),
	machine.EvHistoryRecorded: reflect.TypeFor[machine.RfqHistoryDTO](),
	machine.EvResync:          reflect.TypeFor[struct{}](),
	machine.EvMakerProtection: reflect.TypeFor[machine.MakerProtectionPayload](),
	machine.EvSnapshotEnd:     reflect.TypeFor[machine.SnapshotEndPayload](),
	machine.EvStreamResumed:   reflect.TypeFor[machine.StreamResumedPayload](),
	machine.EvStreamGap:       reflect.TypeFor[machine.StreamGapPayload](),
}

// jsonFields lists a struct's JSON field names, and those it always writes (no omitempty).
func jsonFields(t *testing.T, typ reflect.Type) (all, always []string) {
	t.Helper()
	for f := range typ.Fields() {
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if f.Anonymous || name == "" || name == "-" {
			t.Fatalf("%v.%s: the test reads plain json-tagged fields only", typ, f.Name)
		}
		all = append(all, name)
		if !strings.Contains(opts, "omitempty") {
			always = append(always, name)
		}
	}
	sort.Strings(all)
	sort.Strings(always)
	return all, always
}

// yamlDoc reads a YAML document as generic maps.
func yamlDoc(t *testing.T, file string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return doc
}

// pointer follows a JSON pointer ("/components/schemas/X") through a generic document.
func pointer(t *testing.T, doc map[string]any, ptr string) map[string]any {
	t.Helper()
	var node any = doc
	for _, part := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		m, ok := node.(map[string]any)
		if !ok {
			t.Fatalf("pointer %s: %q is not in an object", ptr, part)
		}
		node = m[part]
	}
	m, ok := node.(map[string]any)
	if !ok {
		t.Fatalf("pointer %s: not an object", ptr)
	}
	return m
}

// names returns a schema's property names and its required list, both sorted.
func names(schema map[string]any) (props, required []string) {
	p, _ := schema["properties"].(map[string]any)
	for k := range p {
		props = append(props, k)
	}
	r, _ := schema["required"].([]any)
	for _, v := range r {
		required = append(required, v.(string))
	}
	sort.Strings(props)
	sort.Strings(required)
	return props, required
}

// TestAsyncAPIPayloadsMatchMachine: each message's payload schema in docs/asyncapi.yaml
// (inline, or the docs/openapi.yaml schema it references) has exactly the JSON fields of the
// Go type the machine emits for that event, and requires exactly those it always writes.
func TestAsyncAPIPayloadsMatchMachine(t *testing.T) {
	var mapped []string
	for ev := range streamPayloads {
		mapped = append(mapped, ev)
	}
	sort.Strings(mapped)
	if diff := cmp.Diff(machineEventTypes(t), mapped); diff != "" {
		t.Fatalf("event types (-machine +streamPayloads of this test):\n%s", diff)
	}
	async := yamlDoc(t, "../docs/asyncapi.yaml")
	openapi := yamlDoc(t, "../docs/openapi.yaml")
	messages := pointer(t, async, "/components/messages")
	for key := range messages {
		frame := pointer(t, async, "/components/messages/"+key+"/payload/properties")
		ev, _ := pointer(t, frame, "/type")["const"].(string)
		typ, ok := streamPayloads[ev]
		if !ok {
			t.Errorf("message %s: type %q is not an event of the machine", key, ev)
			continue
		}
		schema := frame["payload"].(map[string]any)
		if ref, ok := schema["$ref"].(string); ok {
			file, ptr, _ := strings.Cut(ref, "#")
			switch file {
			case "openapi.yaml":
				schema = pointer(t, openapi, ptr)
			case "":
				schema = pointer(t, async, ptr)
			default:
				t.Fatalf("message %s: $ref %q into an unknown document", key, ref)
			}
		}
		props, required := names(schema)
		all, always := jsonFields(t, typ)
		if diff := cmp.Diff(all, props); diff != "" {
			t.Errorf("%s payload fields (-%v +schema properties):\n%s", ev, typ, diff)
		}
		if diff := cmp.Diff(always, required); diff != "" {
			t.Errorf("%s payload fields always written (-%v +schema required):\n%s", ev, typ, diff)
		}
	}
}

// TestRetainedPayloadsAreTyped: every numbered event a resume replays decodes back to the
// type the machine emits it with, so that a consumer of the replayed outputs (the
// simulator's actors) sees what it saw live; the frames that are never retained (resync,
// and the stream's own snapshot.end, stream.resumed, stream.gap) are left out.
func TestRetainedPayloadsAreTyped(t *testing.T) {
	notRetained := map[string]bool{machine.EvResync: true, machine.EvSnapshotEnd: true,
		machine.EvStreamResumed: true, machine.EvStreamGap: true}
	for typ, want := range streamPayloads {
		if notRetained[typ] {
			continue
		}
		raw, err := json.Marshal(reflect.New(want).Elem().Interface())
		if err != nil {
			t.Fatal(err)
		}
		if got := reflect.TypeOf(machine.RetainedPayload(typ, json.RawMessage(raw))); got != want {
			t.Errorf("a replayed %s decodes to %v, want %v (machine.RetainedPayload)", typ, got, want)
		}
	}
}
