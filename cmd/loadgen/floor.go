package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/deskco/rfqdesk/client"
	"github.com/julienschmidt/httprouter"
)

// The transport floor: a bare httprouter server on loopback with the desk's middleware
// shape (an outer handler that wraps the writer to see the status, a route name, the API
// key read and hashed, the JSON body decoded, a JSON answer of the desk's size encoded)
// and no desk behind it. The same client, bodies and concurrency drive it through the
// five API calls of a lifecycle, without signing: what is left is the cost of HTTP and
// JSON on this machine, the least any desk behind this API could cost per lifecycle.

// floorAction is a SignActionDto-shaped answer element.
var floorAction = client.SignAction{ID: "act_0123456789abcdef", Kind: "hash", Purpose: "allocate",
	Description: "allocate 0.001 CBTC for trade tr_0123456789abcdef", Hash: "q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=",
	TradeID: "tr_0123456789abcdef", CreatedAt: time.Unix(1767225600, 0).UTC(), ExpiresAt: time.Unix(1767226200, 0).UTC()}

type floorWriter struct {
	http.ResponseWriter
	status int
	route  string
}

func (w *floorWriter) WriteHeader(s int) { w.status = s; w.ResponseWriter.WriteHeader(s) }

// floorServer starts the bare server and returns its base URL and a stop function.
func floorServer() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	rt := httprouter.New()
	rt.RedirectTrailingSlash, rt.RedirectFixedPath = false, false
	var requests atomic.Int64
	handle := func(method, path string, in func() any, out func() any, status int) {
		rt.Handle(method, path, func(w http.ResponseWriter, r *http.Request, _ httprouter.Params) {
			fw := w.(*floorWriter)
			fw.route = method + " " + path
			key := r.Header.Get("X-API-Key")
			sum := sha256.Sum256([]byte(key))
			_ = hex.EncodeToString(sum[:])
			if in != nil {
				dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, 64<<10))
				dec.DisallowUnknownFields()
				if err := dec.Decode(in()); err != nil {
					http.Error(w, `{"error":"bad body"}`, http.StatusBadRequest)
					return
				}
			}
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(out())
		})
	}
	rfq := client.RFQ{RFQID: "rfq_0123456789abcdef", Taker: "taker-0-abc123", Direction: client.Sell, Qty: loadQty, Base: "cbtc",
		Quote: "usdcx", Deadline: time.Unix(1767225660, 0).UTC(), InvitedMakers: []string{"maker-1-abc123", "maker-2-abc123", "maker-3-abc123"},
		FeeBps: 30, Open: true}
	quote := client.Quote{QuoteID: "q_0123456789abcdef", RFQID: rfq.RFQID, Maker: "maker-1-abc123", Price: price,
		ValidUntil: time.Unix(1767225630, 0).UTC(), Status: "pending"}
	handle("POST", "/rfq", func() any { return new(client.CreateRFQRequest) }, func() any { return rfq }, 200)
	handle("POST", "/maker/quotes", func() any { return new(client.QuoteRequest) },
		func() any {
			return client.QuoteWithActions{Quote: quote, Actions: []client.SignAction{floorAction, floorAction}}
		}, 200)
	handle("POST", "/quote/:id/accept", nil, func() any {
		return client.TradeWithActions{Trade: client.Trade{TradeID: "tr_0123456789abcdef", Taker: rfq.Taker, Maker: quote.Maker,
			Direction: client.Sell, Qty: loadQty, Base: "cbtc", Quote: "usdcx", Price: price, Fee: "0.3", Status: "settling"},
			Actions: []client.SignAction{floorAction, floorAction}}
	}, 202)
	handle("POST", "/tx/execute", func() any {
		return new(struct {
			Signatures []client.ActionSignature `json:"signatures"`
		})
	}, func() any {
		return map[string]any{"results": []client.ExecuteResult{{ActionID: floorAction.ID, Status: client.ExecExecuted},
			{ActionID: floorAction.ID, Status: client.ExecExecuted}}}
	}, 200)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fw := &floorWriter{ResponseWriter: w}
		rt.ServeHTTP(fw, r)
		requests.Add(1) // the desk counts each request by route and status
	}), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// FloorResult is the transport floor's run.
type FloorResult struct {
	TargetRate   float64            `json:"target_rate"`
	DurationS    float64            `json:"duration_s"`
	Sequences    int64              `json:"sequences"`
	SequencesPer float64            `json:"sequences_per_s"`
	Calls        map[string]Summary `json:"calls"`
	// CPU is the CPU time this process (the client and the bare server both) used,
	// per call sequence.
	CPU *CPUUse `json:"cpu,omitempty"`
}

// runFloor drives the bare server with `conc` goroutines, each running the five calls of
// a lifecycle in order (create, quote, execute, accept, execute), for d or maxSeq
// sequences; rate > 0 paces the sequences like runPhase paces lifecycles.
func runFloor(ctx context.Context, conc int, d time.Duration, maxSeq int64, hc *http.Client, rate float64) (FloorResult, error) {
	base, stop, err := floorServer()
	if err != nil {
		return FloorResult{}, err
	}
	defer stop()
	rec := newRecorder()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	sigs := []client.ActionSignature{{ActionID: floorAction.ID, Signature: "c2lnbmF0dXJl"}, {ActionID: floorAction.ID, Signature: "c2lnbmF0dXJl"}}
	tickets := pacer(ctx, rate, conc, nil)
	var done atomic.Int64
	var wg sync.WaitGroup
	start, cpuStart := time.Now(), cpuMeter{}.sample()
	for i := range conc {
		c, err := client.New(base, client.WithHTTPClient(hc), client.WithAPIKey("mk_floor_key_0123456789"))
		if err != nil {
			return FloorResult{}, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			invited := []string{"maker-1-abc123", "maker-2-abc123", "maker-3-abc123"}
			for ctx.Err() == nil && done.Load() < maxSeq {
				if !takeTicket(ctx, tickets) {
					return
				}
				if rec.time(callCreateRFQ, func() error {
					_, err := c.CreateRFQ(ctx, client.CreateRFQRequest{Direction: client.Sell, Qty: loadQty, Base: "cbtc", Quote: "usdcx",
						InvitedMakers: invited, TTLSeconds: 60 + i%2})
					return err
				}) != nil {
					continue
				}
				if rec.time(callSubmitQuote, func() error {
					_, err := c.SubmitQuote(ctx, client.QuoteRequest{RFQID: "rfq_0123456789abcdef", Price: price})
					return err
				}) != nil {
					continue
				}
				if rec.time(callExecMaker, func() error { _, err := c.ExecuteBatch(ctx, sigs); return err }) != nil {
					continue
				}
				if rec.time(callAccept, func() error { _, err := c.AcceptQuote(ctx, "q_0123456789abcdef"); return err }) != nil {
					continue
				}
				if rec.time(callExecTaker, func() error { _, err := c.ExecuteBatch(ctx, sigs); return err }) != nil {
					continue
				}
				if done.Add(1) >= maxSeq {
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpuEnd := time.Since(start), cpuMeter{}.sample()
	calls, _ := rec.summaries()
	return FloorResult{TargetRate: rate, DurationS: elapsed.Seconds(), Sequences: done.Load(), SequencesPer: float64(done.Load()) / elapsed.Seconds(),
		Calls: calls, CPU: cpuUse(cpuStart, cpuEnd, done.Load())}, nil
}
