// Command scale-sarama is bench/scale.py's load generator in compiled code: producers and the
// members of one consumer group, all in this one process, with the Sarama Kafka client
// (Debian's golang-github-shopify-sarama-dev, built offline in GOPATH mode).
//
// It starts -members group members subscribed to -topic, waits until every one has held the
// same non-empty claim for -settle, then starts -producers async producers (acks=all,
// idempotent, flushing every -linger, records without keys placed by Kafka's default sticky
// partitioner unless -partitioner random) that together offer -rate records/s for -warmup
// plus -seconds, each paced on its own share. Every record's value starts with its due time
// (ns since this process started, big-endian); a member takes now - due, and so does the
// producer when the record is acknowledged. It prints one JSON object: {"ok": true,
// "group_settled_s", "sent", "send_failures", "latencies_ms": [...], "ack_latencies_ms":
// [...]} with the latencies of the records due after the warm-up (received until -drain
// after the last one was due); or {"ok": false, "error": ...} and exit status 1.
package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/Shopify/sarama"
)

var (
	brokers   = flag.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap servers")
	topic     = flag.String("topic", "scale", "topic")
	groupID   = flag.String("group", "scale-group", "consumer group id")
	producers = flag.Int("producers", 100, "producers")
	members   = flag.Int("members", 50, "group members")
	rate      = flag.Float64("rate", 20000, "records/s offered by all producers together")
	seconds   = flag.Duration("seconds", 30*time.Second, "timed part of the run")
	warmup    = flag.Duration("warmup", 5*time.Second, "untimed start of the run")
	drain     = flag.Duration("drain", 30*time.Second, "how long members wait for the last records")
	linger    = flag.Duration("linger", 5*time.Millisecond, "producer flush frequency (linger.ms)")
	settle    = flag.Duration("settle", 5*time.Second, "a member's claim must hold this long")
	ready     = flag.Duration("ready-timeout", 180*time.Second, "bound on the group settling")
	size      = flag.Int("size", 100, "record value bytes")
	partition = flag.String("partitioner", "sticky", "sticky (Kafka's default for null keys) or random (Sarama's)")
)

// stickyBatchBytes is how many value bytes a producer sends to one partition before it
// moves on: Kafka's batch.size default, the switch point of its uniform sticky partitioner.
const stickyBatchBytes = 16384

// stickyPartitioner is Kafka's default for records without a key (the Java producer's
// uniform sticky partitioner): every record goes to the current partition until
// stickyBatchBytes were sent to it, then a random other partition becomes current. Records
// then leave in a few multi-record batches instead of one-record batches spread over every
// partition. One per producer and topic; Sarama calls it from one goroutine.
type stickyPartitioner struct {
	current int32
	bytes   int
}

func newStickyPartitioner(string) sarama.Partitioner { return &stickyPartitioner{current: -1} }

func (p *stickyPartitioner) Partition(m *sarama.ProducerMessage, n int32) (int32, error) {
	if p.current < 0 || p.current >= n || p.bytes >= stickyBatchBytes {
		next := rand.Int31n(n)
		if n > 1 {
			for next == p.current {
				next = rand.Int31n(n)
			}
		}
		p.current, p.bytes = next, 0
	}
	p.bytes += m.Value.Length()
	return p.current, nil
}

func (p *stickyPartitioner) RequiresConsistency() bool { return false }

var epoch = time.Now()

func now() int64 { return int64(time.Since(epoch)) }

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.Version = sarama.V2_1_0_0
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	return c
}

// member is one consumer of the group; it records latencies into its own slice.
type member struct {
	claim     atomic.Value // string: the sorted claim of the current session
	since     atomic.Int64 // when that claim began (now())
	warmNs    *atomic.Int64
	latencies []float64
	mu        sync.Mutex
}

func (m *member) Setup(s sarama.ConsumerGroupSession) error {
	m.claim.Store(fmt.Sprint(s.Claims()))
	m.since.Store(now())
	return nil
}

func (m *member) Cleanup(sarama.ConsumerGroupSession) error {
	m.claim.Store("")
	return nil
}

func (m *member) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for msg := range c.Messages() {
		t := now()
		if len(msg.Value) < 8 {
			continue
		}
		due := int64(binary.BigEndian.Uint64(msg.Value))
		warm := m.warmNs.Load()
		if warm > 0 && due >= warm {
			m.mu.Lock()
			m.latencies = append(m.latencies, float64(t-due)/1e6)
			m.mu.Unlock()
		}
	}
	return nil
}

func (m *member) stable() bool {
	claim, _ := m.claim.Load().(string)
	return claim != "" && claim != "map[]" && now()-m.since.Load() >= int64(*settle)
}

func run() (map[string]any, error) {
	if *partition != "sticky" && *partition != "random" {
		return nil, fmt.Errorf("-partitioner %q: sticky or random", *partition)
	}
	addrs := strings.Split(*brokers, ",")
	var warmNs atomic.Int64
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ms := make([]*member, *members)
	groups := make([]sarama.ConsumerGroup, *members)
	var wg sync.WaitGroup
	for i := range ms {
		c := config()
		c.Consumer.Offsets.Initial = sarama.OffsetNewest
		c.Consumer.Return.Errors = false
		g, err := sarama.NewConsumerGroup(addrs, *groupID, c)
		if err != nil {
			return nil, fmt.Errorf("member %d: %w", i, err)
		}
		groups[i] = g
		ms[i] = &member{warmNs: &warmNs}
		ms[i].claim.Store("")
		wg.Add(1)
		go func(g sarama.ConsumerGroup, m *member) {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := g.Consume(ctx, []string{*topic}, m); err != nil && ctx.Err() == nil {
					time.Sleep(200 * time.Millisecond)
				}
			}
		}(g, ms[i])
	}
	defer func() {
		cancel()
		for _, g := range groups {
			g.Close()
		}
		wg.Wait()
	}()
	t0 := time.Now()
	for {
		all := true
		for _, m := range ms {
			if !m.stable() {
				all = false
				break
			}
		}
		if all {
			break
		}
		if time.Since(t0) > *ready {
			return nil, errors.New("the group did not settle")
		}
		time.Sleep(200 * time.Millisecond)
	}
	settled := time.Since(t0).Seconds()

	ps := make([]sarama.AsyncProducer, *producers)
	var failures atomic.Int64
	var ackMu sync.Mutex
	var acks []float64 // due -> acknowledged, for the records due after the warm-up
	var pwg sync.WaitGroup
	for i := range ps {
		c := config()
		c.Producer.RequiredAcks = sarama.WaitForAll
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1 // Sarama's requirement for an idempotent producer
		c.Producer.Retry.Max = 10
		c.Producer.Flush.Frequency = *linger
		if *partition == "sticky" {
			c.Producer.Partitioner = newStickyPartitioner
		}
		c.Producer.Return.Successes = true
		c.Producer.Return.Errors = true
		p, err := sarama.NewAsyncProducer(addrs, c)
		if err != nil {
			return nil, fmt.Errorf("producer %d: %w", i, err)
		}
		ps[i] = p
		pwg.Add(2)
		go func(p sarama.AsyncProducer) {
			defer pwg.Done()
			for range p.Errors() {
				failures.Add(1)
			}
		}(p)
		go func(p sarama.AsyncProducer) {
			defer pwg.Done()
			var mine []float64
			for m := range p.Successes() {
				t := now()
				due := m.Metadata.(int64)
				if warm := warmNs.Load(); warm > 0 && due >= warm {
					mine = append(mine, float64(t-due)/1e6)
				}
			}
			ackMu.Lock()
			acks = append(acks, mine...)
			ackMu.Unlock()
		}(p)
	}
	start := now() + int64(time.Second)
	warmNs.Store(start + int64(*warmup))
	total := int((*warmup + *seconds).Seconds() * *rate)
	var sent atomic.Int64
	var swg sync.WaitGroup
	pad := make([]byte, *size-8)
	for i, p := range ps {
		swg.Add(1)
		go func(i int, p sarama.AsyncProducer) {
			defer swg.Done()
			// Producer i sends records i, i+P, i+2P, ... of the whole paced sequence.
			step := float64(time.Second) / *rate
			for k := i; k < total; k += len(ps) {
				due := start + int64(float64(k)*step)
				if wait := due - now(); wait > 0 {
					time.Sleep(time.Duration(wait))
				}
				v := make([]byte, 8, *size)
				binary.BigEndian.PutUint64(v, uint64(due))
				p.Input() <- &sarama.ProducerMessage{Topic: *topic, Value: sarama.ByteEncoder(append(v, pad...)), Metadata: due}
				sent.Add(1)
			}
		}(i, p)
	}
	swg.Wait()
	for _, p := range ps {
		p.AsyncClose()
	}
	pwg.Wait()
	end := start + int64(*warmup+*seconds)
	for now() < end+int64(*drain) {
		got := 0
		for _, m := range ms {
			m.mu.Lock()
			got += len(m.latencies)
			m.mu.Unlock()
		}
		if got >= int(seconds.Seconds()**rate) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	var lat []float64
	for _, m := range ms {
		m.mu.Lock()
		lat = append(lat, m.latencies...)
		m.mu.Unlock()
	}
	return map[string]any{
		"group_settled_s":  settled,
		"sent":             sent.Load(),
		"send_failures":    failures.Load(),
		"latencies_ms":     lat,
		"ack_latencies_ms": acks,
	}, nil
}

func main() {
	flag.Parse()
	out, err := run()
	enc := json.NewEncoder(os.Stdout)
	if err != nil {
		enc.Encode(map[string]any{"ok": false, "error": err.Error()})
		os.Exit(1)
	}
	out["ok"] = true
	enc.Encode(out)
}
