// Command nats-bench drives NATS JetStream with its own Go client (nats.go from Debian's
// golang-github-nats-io-go-nats-dev, built offline in GOPATH mode by bench/nats_native.py),
// so that kraftlog is compared with the server and not with a Python client.
//
// Subcommands (each prints one JSON object on stdout):
//
//	produce -servers U -stream S -n N -size B   a new stream of 3 replicas (file storage);
//	                                            N asynchronous publishes, every ack awaited
//	                                            {"seconds", "messages", "errors"}
//	consume -servers U -stream S -n N           a pull consumer without acks from the start,
//	                                            batches of 1,000, timed from the first
//	                                            message {"seconds", "messages" after it}
//	latency -servers U -stream S -rate R -seconds T -warmup W
//	                                            a new stream; a paced asynchronous publisher
//	                                            writes each message's due time into it, an
//	                                            ordered push consumer in the same process
//	                                            takes now - due {"latencies_s": [...]} for
//	                                            the messages due after the warm-up
package main

import (
	"encoding/binary"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// Acks in flight at most, as the Python pair (nats-py's default).
const maxPending = 4000
const consumeBatch = 1000
const replicas = 3

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func emit(v interface{}) {
	if err := json.NewEncoder(os.Stdout).Encode(v); err != nil {
		fail("encode: %v", err)
	}
}

// Asynchronous publishes that failed (no quorum ack), counted by the JetStream context.
var publishErrors int64

func connect(servers string) (*nats.Conn, nats.JetStreamContext) {
	nc, err := nats.Connect(servers, nats.Timeout(10*time.Second))
	if err != nil {
		fail("connect %s: %v", servers, err)
	}
	js, err := nc.JetStream(
		nats.PublishAsyncMaxPending(maxPending),
		nats.PublishAsyncErrHandler(func(nats.JetStream, *nats.Msg, error) {
			atomic.AddInt64(&publishErrors, 1)
		}),
	)
	if err != nil {
		fail("jetstream: %v", err)
	}
	return nc, js
}

func newStream(js nats.JetStreamContext, name string) {
	_ = js.DeleteStream(name)
	_, err := js.AddStream(&nats.StreamConfig{
		Name:     name,
		Subjects: []string{name},
		Replicas: replicas,
		Storage:  nats.FileStorage,
	})
	if err != nil {
		fail("add stream %s: %v", name, err)
	}
}

func produce(servers, stream string, n, size int) {
	nc, js := connect(servers)
	defer nc.Close()
	newStream(js, stream)
	payload := make([]byte, size)
	start := time.Now()
	for i := 0; i < n; i++ {
		if _, err := js.PublishAsync(stream, payload); err != nil {
			fail("publish: %v", err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(5 * time.Minute):
		fail("acks did not all come within 5 minutes")
	}
	emit(map[string]interface{}{
		"seconds": time.Since(start).Seconds(), "messages": n, "errors": atomic.LoadInt64(&publishErrors),
	})
}

func consume(servers, stream string, n int) {
	nc, js := connect(servers)
	defer nc.Close()
	sub, err := js.PullSubscribe(stream, "bench-consume", nats.AckNone(), nats.DeliverAll(),
		nats.BindStream(stream))
	if err != nil {
		fail("pull subscribe: %v", err)
	}
	got := 0
	deadline := time.Now().Add(5 * time.Minute)
	fetch := func(batch int) {
		msgs, err := sub.Fetch(batch, nats.MaxWait(2*time.Second))
		if err != nil && err != nats.ErrTimeout {
			fail("fetch: %v", err)
		}
		got += len(msgs)
	}
	// The clock starts at the first message, as the kraftlog pair's does.
	for got == 0 && time.Now().Before(deadline) {
		fetch(1)
	}
	start := time.Now()
	for got < n && time.Now().Before(deadline) {
		fetch(consumeBatch)
	}
	emit(map[string]interface{}{"seconds": time.Since(start).Seconds(), "messages": got - 1})
}

func latency(servers, stream string, rate int, seconds, warmup float64) {
	nc, js := connect(servers)
	defer nc.Close()
	newStream(js, stream)
	start := time.Now()
	timedFrom := int64(warmup * float64(time.Second))
	total := int((warmup + seconds) * float64(rate))
	var mu sync.Mutex
	latencies := make([]float64, 0, int(seconds*float64(rate)))
	received := make(chan struct{}, 1)
	var count int64
	_, err := js.Subscribe(stream, func(m *nats.Msg) {
		now := time.Since(start).Nanoseconds()
		due := int64(binary.BigEndian.Uint64(m.Data))
		if due >= timedFrom {
			mu.Lock()
			latencies = append(latencies, float64(now-due)/1e9)
			mu.Unlock()
		}
		if int(atomic.AddInt64(&count, 1)) == total {
			received <- struct{}{}
		}
	}, nats.OrderedConsumer())
	if err != nil {
		fail("subscribe: %v", err)
	}
	payload := make([]byte, 100)
	for i := 0; i < total; i++ {
		due := time.Duration(float64(i) / float64(rate) * float64(time.Second))
		if wait := due - time.Since(start); wait > 0 {
			time.Sleep(wait)
		}
		binary.BigEndian.PutUint64(payload, uint64(due.Nanoseconds()))
		if _, err := js.PublishAsync(stream, payload); err != nil {
			fail("publish: %v", err)
		}
	}
	select {
	case <-received:
	case <-time.After(time.Duration(seconds+60) * time.Second):
	}
	mu.Lock()
	defer mu.Unlock()
	emit(map[string]interface{}{"latencies_s": latencies})
}

func main() {
	if len(os.Args) < 2 {
		fail("usage: nats-bench produce|consume|latency [flags]")
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	servers := fs.String("servers", "nats://127.0.0.1:4222", "comma-separated server URLs")
	stream := fs.String("stream", "bench", "stream (and subject) name")
	n := fs.Int("n", 100000, "messages")
	size := fs.Int("size", 100, "message bytes")
	rate := fs.Int("rate", 20000, "messages per second offered")
	seconds := fs.Float64("seconds", 5, "timed seconds")
	warmup := fs.Float64("warmup", 1, "seconds before the timed ones")
	if err := fs.Parse(os.Args[2:]); err != nil {
		fail("%v", err)
	}
	urls := strings.TrimSpace(*servers)
	switch os.Args[1] {
	case "produce":
		produce(urls, *stream, *n, *size)
	case "consume":
		consume(urls, *stream, *n)
	case "latency":
		latency(urls, *stream, *rate, *seconds, *warmup)
	default:
		fail("unknown subcommand %q", os.Args[1])
	}
}
