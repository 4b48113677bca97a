// Command sarama-compat drives a kraftlog cluster with the Sarama Kafka client (Debian's
// golang-github-shopify-sarama-dev, built in GOPATH mode) for tests/compat/test_compat_sarama.py.
//
// Each subcommand prints one JSON object on stdout: {"ok": true, ...results} on success, or
// {"ok": false, "step": ..., "error": ...} followed by exit status 1. Sarama's own log goes to
// stderr with -v.
//
//	create-topic       -topic T -partitions P
//	admin              -topic T                       CreateTopic, ListTopics, DescribeTopics,
//	                                                  DescribeConfig, AlterConfig, DeleteTopic
//	produce            -topic T -mode sync|async -codec C -count N -prefix X -base-ts MS [-idempotent]
//	consume-partitions -topic T -expect N             a PartitionConsumer per partition
//	consume-group      -topic T -group G -strategy range|roundrobin -members M -expect N
//	offsets-by-time    -topic T -count N -base-ts MS  Client.GetOffset by timestamp
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/ioutil"
	"log"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/Shopify/sarama"
)

var (
	brokers    = flag.String("brokers", "127.0.0.1:9092", "comma-separated bootstrap servers")
	topic      = flag.String("topic", "", "topic")
	partitions = flag.Int("partitions", 3, "partitions (create-topic)")
	mode       = flag.String("mode", "sync", "producer: sync or async")
	codec      = flag.String("codec", "none", "none, gzip, snappy, lz4 or zstd")
	count      = flag.Int("count", 100, "records to produce")
	prefix     = flag.String("prefix", "p", "key/value prefix")
	baseTs     = flag.Int64("base-ts", 0, "timestamp (ms) of the first record; record i gets base+i*step")
	tsStep     = flag.Int64("ts-step", 1, "timestamp step between records (ms)")
	idempotent = flag.Bool("idempotent", false, "idempotent producer")
	expect     = flag.Int("expect", 0, "records to consume before stopping")
	group      = flag.String("group", "", "consumer group id")
	strategy   = flag.String("strategy", "range", "range or roundrobin")
	members    = flag.Int("members", 2, "consumer group members (one process)")
	timeout    = flag.Duration("timeout", 60*time.Second, "deadline for the whole subcommand")
	verbose    = flag.Bool("v", false, "Sarama's log on stderr")
)

// failure is an error tagged with the step that produced it.
type failure struct {
	step string
	err  error
}

func (f *failure) Error() string { return f.step + ": " + f.err.Error() }

func fail(step string, err error) error { return &failure{step, err} }

func emit(v map[string]interface{}) {
	out, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintln(os.Stderr, "json:", err)
		os.Exit(2)
	}
	fmt.Println(string(out))
}

func config() *sarama.Config {
	c := sarama.NewConfig()
	c.ClientID = "sarama-compat"
	c.Version = sarama.V2_1_0_0
	c.Metadata.Retry.Max = 10
	c.Metadata.Retry.Backoff = 200 * time.Millisecond
	c.Net.DialTimeout = 10 * time.Second
	c.Net.ReadTimeout = 30 * time.Second
	c.Net.WriteTimeout = 10 * time.Second
	return c
}

func brokerList() []string { return strings.Split(*brokers, ",") }

func codecOf(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return sarama.CompressionNone, fmt.Errorf("unknown codec %q", name)
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: sarama-compat SUBCOMMAND [flags]")
		os.Exit(2)
	}
	sub := os.Args[1]
	if err := flag.CommandLine.Parse(os.Args[2:]); err != nil {
		os.Exit(2)
	}
	if *verbose {
		sarama.Logger = log.New(os.Stderr, "[sarama] ", log.LstdFlags|log.Lmicroseconds)
	} else {
		sarama.Logger = log.New(ioutil.Discard, "", 0)
	}
	commands := map[string]func() (map[string]interface{}, error){
		"create-topic":       createTopic,
		"admin":              admin,
		"produce":            produce,
		"consume-partitions": consumePartitions,
		"consume-group":      consumeGroup,
		"offsets-by-time":    offsetsByTime,
	}
	run, ok := commands[sub]
	if !ok {
		fmt.Fprintln(os.Stderr, "unknown subcommand", sub)
		os.Exit(2)
	}
	type result struct {
		out map[string]interface{}
		err error
	}
	done := make(chan result, 1)
	go func() {
		out, err := run()
		done <- result{out, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(*timeout + 5*time.Second):
		res = result{nil, fail("deadline", fmt.Errorf("%s did not finish in %s", sub, *timeout))}
	}
	if res.err != nil {
		step := "run"
		var f *failure
		if errors.As(res.err, &f) {
			step = f.step
		}
		out := res.out
		if out == nil {
			out = map[string]interface{}{}
		}
		out["ok"] = false
		out["step"] = step
		out["error"] = res.err.Error()
		emit(out)
		os.Exit(1)
	}
	res.out["ok"] = true
	emit(res.out)
}

// waitFor polls cond every 100 ms until it holds or the deadline passes.
func waitFor(deadline time.Duration, cond func() (bool, error)) error {
	end := time.Now().Add(deadline)
	var last error
	for time.Now().Before(end) {
		ok, err := cond()
		if ok {
			return nil
		}
		last = err
		time.Sleep(100 * time.Millisecond)
	}
	if last != nil {
		return fmt.Errorf("condition not met in %s (last error: %v)", deadline, last)
	}
	return fmt.Errorf("condition not met in %s", deadline)
}

// --- admin --------------------------------------------------------------------------------

func createTopic() (map[string]interface{}, error) {
	ca, err := sarama.NewClusterAdmin(brokerList(), config())
	if err != nil {
		return nil, fail("new-admin", err)
	}
	defer ca.Close()
	detail := &sarama.TopicDetail{NumPartitions: int32(*partitions), ReplicationFactor: 1}
	if err := ca.CreateTopic(*topic, detail, false); err != nil {
		return nil, fail("create-topic", err)
	}
	err = waitFor(30*time.Second, func() (bool, error) {
		md, err := ca.DescribeTopics([]string{*topic})
		if err != nil || len(md) != 1 || md[0].Err != sarama.ErrNoError {
			return false, err
		}
		for _, p := range md[0].Partitions {
			if p.Err != sarama.ErrNoError || p.Leader < 0 {
				return false, nil
			}
		}
		return len(md[0].Partitions) == *partitions, nil
	})
	if err != nil {
		return nil, fail("wait-leaders", err)
	}
	return map[string]interface{}{"topic": *topic, "partitions": *partitions}, nil
}

func describeConfig(ca sarama.ClusterAdmin, names []string) (map[string]interface{}, error) {
	entries, err := ca.DescribeConfig(sarama.ConfigResource{
		Type: sarama.TopicResource, Name: *topic, ConfigNames: names,
	})
	if err != nil {
		return nil, err
	}
	out := map[string]interface{}{}
	for _, e := range entries {
		out[e.Name] = map[string]interface{}{
			"value": e.Value, "default": e.Default, "read_only": e.ReadOnly,
		}
	}
	return out, nil
}

func strp(s string) *string { return &s }

// errorCode is the Kafka error code of err (0 for nil, -2 if err carries none).
func errorCode(err error) int {
	switch e := err.(type) {
	case nil:
		return 0
	case sarama.KError:
		return int(e)
	case *sarama.TopicError:
		return int(e.Err)
	}
	return -2
}

func admin() (map[string]interface{}, error) {
	out := map[string]interface{}{}
	ca, err := sarama.NewClusterAdmin(brokerList(), config())
	if err != nil {
		return out, fail("new-admin", err)
	}
	defer ca.Close()

	detail := &sarama.TopicDetail{
		NumPartitions:     3,
		ReplicationFactor: 1,
		ConfigEntries: map[string]*string{
			"retention.ms":      strp("3600000"),
			"max.message.bytes": strp("500000"),
		},
	}
	if err := ca.CreateTopic(*topic, detail, false); err != nil {
		return out, fail("create-topic", err)
	}
	// A second create must fail with TOPIC_ALREADY_EXISTS.
	err = ca.CreateTopic(*topic, detail, false)
	out["create_again_error"] = fmt.Sprint(err)
	out["create_again_code"] = errorCode(err)

	var listed sarama.TopicDetail
	err = waitFor(30*time.Second, func() (bool, error) {
		topics, err := ca.ListTopics()
		if err != nil {
			return false, err
		}
		d, ok := topics[*topic]
		listed = d
		return ok, nil
	})
	if err != nil {
		return out, fail("list-topics", err)
	}
	out["listed_partitions"] = listed.NumPartitions
	out["listed_replication_factor"] = listed.ReplicationFactor

	md, err := ca.DescribeTopics([]string{*topic})
	if err != nil {
		return out, fail("describe-topics", err)
	}
	if len(md) != 1 {
		return out, fail("describe-topics", fmt.Errorf("%d topics described", len(md)))
	}
	ids := []int{}
	for _, p := range md[0].Partitions {
		ids = append(ids, int(p.ID))
	}
	sort.Ints(ids)
	out["described_error"] = md[0].Err.Error()
	out["described_partition_ids"] = ids

	names := []string{"retention.ms", "max.message.bytes", "cleanup.policy"}
	before, err := describeConfig(ca, names)
	if err != nil {
		return out, fail("describe-config", err)
	}
	out["config_before"] = before

	// AlterConfigs (API 33) replaces every override of the topic: max.message.bytes is left
	// out and must fall back to its default.
	alter := map[string]*string{
		"retention.ms":   strp("7200000"),
		"cleanup.policy": strp("compact"),
	}
	if err := ca.AlterConfig(sarama.TopicResource, *topic, alter, false); err != nil {
		return out, fail("alter-config", err)
	}
	var after map[string]interface{}
	err = waitFor(30*time.Second, func() (bool, error) {
		after, err = describeConfig(ca, names)
		if err != nil {
			return false, err
		}
		r, _ := after["retention.ms"].(map[string]interface{})
		return r != nil && r["value"] == "7200000", nil
	})
	out["config_after"] = after
	if err != nil {
		return out, fail("describe-config-after-alter", err)
	}
	all, err := describeConfig(ca, nil)
	if err != nil {
		return out, fail("describe-config-all", err)
	}
	out["config_all_count"] = len(all)

	if err := ca.DeleteTopic(*topic); err != nil {
		return out, fail("delete-topic", err)
	}
	err = ca.DeleteTopic(*topic)
	out["delete_again_error"] = fmt.Sprint(err)
	out["delete_again_code"] = errorCode(err)
	err = waitFor(30*time.Second, func() (bool, error) {
		topics, err := ca.ListTopics()
		if err != nil {
			return false, err
		}
		_, ok := topics[*topic]
		return !ok, nil
	})
	if err != nil {
		return out, fail("list-after-delete", err)
	}
	out["deleted"] = true
	return out, nil
}

// --- produce ------------------------------------------------------------------------------

func message(i int) *sarama.ProducerMessage {
	return &sarama.ProducerMessage{
		Topic:     *topic,
		Key:       sarama.StringEncoder(fmt.Sprintf("%s-k%05d", *prefix, i)),
		Value:     sarama.StringEncoder(fmt.Sprintf("%s-v%05d-%s", *prefix, i, strings.Repeat("abc", i%50))),
		Headers:   []sarama.RecordHeader{{Key: []byte("i"), Value: []byte(fmt.Sprint(i))}},
		Timestamp: time.Unix(0, (*baseTs+int64(i)**tsStep)*int64(time.Millisecond)),
		Metadata:  i,
	}
}

func producerConfig() (*sarama.Config, error) {
	c := config()
	cc, err := codecOf(*codec)
	if err != nil {
		return nil, err
	}
	c.Producer.Compression = cc
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Retry.Max = 5
	c.Producer.Retry.Backoff = 200 * time.Millisecond
	c.Producer.Flush.Messages = 50
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	if *idempotent {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
	return c, nil
}

// producedRecord: [key, value, partition, offset].
type producedRecord [4]interface{}

func recordOf(m *sarama.ProducerMessage) producedRecord {
	k, _ := m.Key.Encode()
	v, _ := m.Value.Encode()
	return producedRecord{string(k), string(v), m.Partition, m.Offset}
}

func produce() (map[string]interface{}, error) {
	out := map[string]interface{}{"mode": *mode, "codec": *codec, "idempotent": *idempotent}
	c, err := producerConfig()
	if err != nil {
		return out, fail("config", err)
	}
	records := make([]producedRecord, 0, *count)
	switch *mode {
	case "sync":
		p, err := sarama.NewSyncProducer(brokerList(), c)
		if err != nil {
			return out, fail("new-sync-producer", err)
		}
		// Batches of 50 records (one record batch per partition per request), then single sends.
		i := 0
		for ; i+50 <= *count/2; i += 50 {
			batch := make([]*sarama.ProducerMessage, 0, 50)
			for j := i; j < i+50; j++ {
				batch = append(batch, message(j))
			}
			if err := p.SendMessages(batch); err != nil {
				p.Close()
				return out, fail("send-messages", err)
			}
			for _, m := range batch {
				records = append(records, recordOf(m))
			}
		}
		for ; i < *count; i++ {
			m := message(i)
			if _, _, err := p.SendMessage(m); err != nil {
				p.Close()
				return out, fail("send-message", err)
			}
			records = append(records, recordOf(m))
		}
		if err := p.Close(); err != nil {
			return out, fail("close", err)
		}
	case "async":
		p, err := sarama.NewAsyncProducer(brokerList(), c)
		if err != nil {
			return out, fail("new-async-producer", err)
		}
		var errs []string
		var wg sync.WaitGroup
		var mu sync.Mutex
		wg.Add(2)
		go func() {
			defer wg.Done()
			for m := range p.Successes() {
				mu.Lock()
				records = append(records, recordOf(m))
				mu.Unlock()
			}
		}()
		go func() {
			defer wg.Done()
			for e := range p.Errors() {
				mu.Lock()
				errs = append(errs, e.Error())
				mu.Unlock()
			}
		}()
		for i := 0; i < *count; i++ {
			p.Input() <- message(i)
		}
		p.AsyncClose() // flushes everything in flight, then closes both channels
		wg.Wait()
		if len(errs) > 0 {
			out["errors"] = errs
			return out, fail("async-produce", fmt.Errorf("%d errors, first: %s", len(errs), errs[0]))
		}
	default:
		return out, fail("config", fmt.Errorf("unknown mode %q", *mode))
	}
	out["records"] = records
	return out, nil
}

// --- consume ------------------------------------------------------------------------------

// consumedRecord: [member, partition, offset, key, value, timestamp ms, header i].
type consumedRecord [7]interface{}

func recordFrom(member int, m *sarama.ConsumerMessage) consumedRecord {
	h := ""
	for _, rh := range m.Headers {
		if string(rh.Key) == "i" {
			h = string(rh.Value)
		}
	}
	return consumedRecord{
		member, m.Partition, m.Offset, string(m.Key), string(m.Value),
		m.Timestamp.UnixNano() / int64(time.Millisecond), h,
	}
}

func endOffsets(client sarama.Client) (map[string]int64, map[string]int64, []int32, error) {
	ps, err := client.Partitions(*topic)
	if err != nil {
		return nil, nil, nil, err
	}
	newest := map[string]int64{}
	oldest := map[string]int64{}
	for _, p := range ps {
		n, err := client.GetOffset(*topic, p, sarama.OffsetNewest)
		if err != nil {
			return nil, nil, nil, err
		}
		o, err := client.GetOffset(*topic, p, sarama.OffsetOldest)
		if err != nil {
			return nil, nil, nil, err
		}
		newest[fmt.Sprint(p)] = n
		oldest[fmt.Sprint(p)] = o
	}
	return newest, oldest, ps, nil
}

func consumePartitions() (map[string]interface{}, error) {
	out := map[string]interface{}{}
	c := config()
	c.Consumer.Return.Errors = true
	client, err := sarama.NewClient(brokerList(), c)
	if err != nil {
		return out, fail("new-client", err)
	}
	defer client.Close()
	newest, oldest, ps, err := endOffsets(client)
	if err != nil {
		return out, fail("end-offsets", err)
	}
	out["newest"], out["oldest"] = newest, oldest
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return out, fail("new-consumer", err)
	}
	defer consumer.Close()
	records := []consumedRecord{}
	deadline := time.After(*timeout)
	for _, p := range ps {
		end := newest[fmt.Sprint(p)]
		start := oldest[fmt.Sprint(p)]
		if end <= start {
			continue
		}
		pc, err := consumer.ConsumePartition(*topic, p, sarama.OffsetOldest)
		if err != nil {
			return out, fail("consume-partition", err)
		}
	loop:
		for {
			select {
			case m := <-pc.Messages():
				records = append(records, recordFrom(0, m))
				if m.Offset >= end-1 {
					break loop
				}
			case e := <-pc.Errors():
				pc.Close()
				return out, fail("partition-consumer", e)
			case <-deadline:
				pc.Close()
				out["records"] = records
				return out, fail("deadline", fmt.Errorf("partition %d: read %d records", p, len(records)))
			}
		}
		if err := pc.Close(); err != nil {
			return out, fail("close-partition-consumer", err)
		}
	}
	out["records"] = records
	if *expect > 0 && len(records) != *expect {
		return out, fail("count", fmt.Errorf("read %d records, expected %d", len(records), *expect))
	}
	return out, nil
}

// groupState is shared by the members of one group running in this process. A member reads
// only once every member has set up the same generation and the claims cover every
// partition, so no record is read before the final rebalance (which would deliver it twice).
type groupState struct {
	mu        sync.Mutex
	setups    map[int]int32   // member -> generation of its latest Setup
	claims    map[int][]int32 // member -> partitions claimed in that generation
	memberIDs map[int]string
	records   []consumedRecord
	total     int
	done      chan struct{}
	doneOnce  sync.Once
	parts     int
	members   int
}

func (g *groupState) ready(gen int32) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if len(g.setups) != g.members {
		return false
	}
	covered := 0
	for m, sg := range g.setups {
		if sg != gen {
			return false
		}
		covered += len(g.claims[m])
	}
	return covered == g.parts
}

type member struct {
	idx   int
	state *groupState
}

func (h *member) Setup(s sarama.ConsumerGroupSession) error {
	h.state.mu.Lock()
	defer h.state.mu.Unlock()
	h.state.setups[h.idx] = s.GenerationID()
	ps := append([]int32(nil), s.Claims()[*topic]...)
	sort.Slice(ps, func(i, j int) bool { return ps[i] < ps[j] })
	h.state.claims[h.idx] = ps
	h.state.memberIDs[h.idx] = s.MemberID()
	return nil
}

func (h *member) Cleanup(sarama.ConsumerGroupSession) error { return nil }

func (h *member) ConsumeClaim(s sarama.ConsumerGroupSession, claim sarama.ConsumerGroupClaim) error {
	for !h.state.ready(s.GenerationID()) {
		select {
		case <-s.Context().Done():
			return nil
		case <-time.After(20 * time.Millisecond):
		}
	}
	for {
		select {
		case m, ok := <-claim.Messages():
			if !ok {
				return nil
			}
			s.MarkMessage(m, "")
			h.state.mu.Lock()
			h.state.records = append(h.state.records, recordFrom(h.idx, m))
			h.state.total++
			if h.state.total >= *expect {
				h.state.doneOnce.Do(func() { close(h.state.done) })
			}
			h.state.mu.Unlock()
		case <-s.Context().Done():
			return nil
		}
	}
}

func consumeGroup() (map[string]interface{}, error) {
	out := map[string]interface{}{"group": *group, "strategy": *strategy}
	c := config()
	switch *strategy {
	case "range":
		c.Consumer.Group.Rebalance.Strategy = sarama.BalanceStrategyRange
	case "roundrobin":
		c.Consumer.Group.Rebalance.Strategy = sarama.BalanceStrategyRoundRobin
	default:
		return out, fail("config", fmt.Errorf("unknown strategy %q", *strategy))
	}
	c.Consumer.Offsets.Initial = sarama.OffsetOldest
	c.Consumer.Offsets.CommitInterval = 200 * time.Millisecond
	c.Consumer.Return.Errors = true
	c.Consumer.Group.Session.Timeout = 10 * time.Second
	c.Consumer.Group.Heartbeat.Interval = 500 * time.Millisecond
	c.Consumer.Group.Rebalance.Timeout = 20 * time.Second

	client, err := sarama.NewClient(brokerList(), config())
	if err != nil {
		return out, fail("new-client", err)
	}
	defer client.Close()
	ps, err := client.Partitions(*topic)
	if err != nil {
		return out, fail("partitions", err)
	}

	state := &groupState{
		setups: map[int]int32{}, claims: map[int][]int32{}, memberIDs: map[int]string{},
		done: make(chan struct{}), parts: len(ps), members: *members,
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	var errMu sync.Mutex
	var groupErrs []string
	groups := make([]sarama.ConsumerGroup, 0, *members)
	for i := 0; i < *members; i++ {
		cg, err := sarama.NewConsumerGroup(brokerList(), *group, c)
		if err != nil {
			cancel()
			return out, fail("new-consumer-group", err)
		}
		groups = append(groups, cg)
		wg.Add(2)
		go func() {
			defer wg.Done()
			for e := range cg.Errors() {
				errMu.Lock()
				groupErrs = append(groupErrs, e.Error())
				errMu.Unlock()
			}
		}()
		go func(i int, cg sarama.ConsumerGroup) {
			defer wg.Done()
			h := &member{idx: i, state: state}
			// Consume returns at every rebalance; bounded by the context and the deadline.
			for attempt := 0; attempt < 1000 && ctx.Err() == nil; attempt++ {
				if err := cg.Consume(ctx, []string{*topic}, h); err != nil {
					errMu.Lock()
					groupErrs = append(groupErrs, "consume: "+err.Error())
					errMu.Unlock()
					select {
					case <-ctx.Done():
					case <-time.After(200 * time.Millisecond):
					}
				}
			}
		}(i, cg)
	}

	var runErr error
	select {
	case <-state.done:
	case <-time.After(*timeout):
		runErr = fail("deadline", fmt.Errorf("consumed %d of %d records", state.total, *expect))
	}
	cancel() // every member's session ends and commits what it marked
	for _, cg := range groups {
		if err := cg.Close(); err != nil && runErr == nil {
			runErr = fail("close-group", err)
		}
	}
	wg.Wait()

	state.mu.Lock()
	out["records"] = state.records
	assignments := map[string][]int32{}
	for m, claims := range state.claims {
		assignments[fmt.Sprint(m)] = claims
	}
	out["assignments"] = assignments
	generations := map[string]int32{}
	for m, g := range state.setups {
		generations[fmt.Sprint(m)] = g
	}
	out["generations"] = generations
	state.mu.Unlock()
	errMu.Lock()
	out["group_errors"] = groupErrs
	errMu.Unlock()
	if runErr != nil {
		return out, runErr
	}

	// Committed offsets (OffsetFetch) against the log end offsets.
	newest, _, _, err := endOffsets(client)
	if err != nil {
		return out, fail("end-offsets", err)
	}
	out["newest"] = newest
	ca, err := sarama.NewClusterAdmin(brokerList(), config())
	if err != nil {
		return out, fail("new-admin", err)
	}
	defer ca.Close()
	resp, err := ca.ListConsumerGroupOffsets(*group, map[string][]int32{*topic: ps})
	if err != nil {
		return out, fail("list-group-offsets", err)
	}
	committed := map[string]int64{}
	for _, p := range ps {
		b := resp.GetBlock(*topic, p)
		if b == nil {
			return out, fail("list-group-offsets", fmt.Errorf("no block for partition %d", p))
		}
		if b.Err != sarama.ErrNoError {
			return out, fail("list-group-offsets", b.Err)
		}
		committed[fmt.Sprint(p)] = b.Offset
	}
	out["committed"] = committed
	return out, nil
}

// --- offsets by timestamp -----------------------------------------------------------------

func offsetsByTime() (map[string]interface{}, error) {
	out := map[string]interface{}{}
	// Record i carries timestamp base+i*1000, on partition 0: the first half sent one record
	// per request, the second half in one request (one record batch of many timestamps).
	*tsStep = 1000
	c, err := producerConfig()
	if err != nil {
		return out, fail("config", err)
	}
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Flush.Messages = 0
	c.Producer.Flush.Frequency = 0
	p, err := sarama.NewSyncProducer(brokerList(), c)
	if err != nil {
		return out, fail("new-sync-producer", err)
	}
	var offsets []int64
	half := *count / 2
	defer func() { p.Close() }()
	for i := 0; i < half; i++ {
		m := message(i)
		m.Partition = 0
		if _, _, err := p.SendMessage(m); err != nil {
			return out, fail("send-message", err)
		}
		offsets = append(offsets, m.Offset)
	}
	if err := p.Close(); err != nil {
		return out, fail("close-producer", err)
	}
	// The batch producer flushes only once it holds every record of the batch.
	c.Producer.Flush.Messages = *count - half
	c.Producer.Flush.Frequency = 2 * time.Second
	if p, err = sarama.NewSyncProducer(brokerList(), c); err != nil {
		return out, fail("new-sync-producer", err)
	}
	batch := []*sarama.ProducerMessage{}
	for i := half; i < *count; i++ {
		m := message(i)
		m.Partition = 0
		batch = append(batch, m)
	}
	if err := p.SendMessages(batch); err != nil {
		return out, fail("send-messages", err)
	}
	for _, m := range batch {
		offsets = append(offsets, m.Offset)
	}
	out["produced_offsets"] = offsets

	client, err := sarama.NewClient(brokerList(), config())
	if err != nil {
		return out, fail("new-client", err)
	}
	defer client.Close()
	// [target timestamp, offset answered]
	queries := [][2]int64{}
	targets := []int64{*baseTs - 1000, *baseTs - 1}
	for i := 0; i < *count; i++ {
		ts := *baseTs + int64(i)*1000
		targets = append(targets, ts-500, ts, ts+1)
	}
	targets = append(targets, *baseTs+int64(*count)*1000)
	for _, ts := range targets {
		o, err := client.GetOffset(*topic, 0, ts)
		if err != nil {
			return out, fail("get-offset", fmt.Errorf("timestamp %d: %v", ts, err))
		}
		queries = append(queries, [2]int64{ts, o})
	}
	out["queries"] = queries
	newest, err := client.GetOffset(*topic, 0, sarama.OffsetNewest)
	if err != nil {
		return out, fail("get-offset-newest", err)
	}
	oldest, err := client.GetOffset(*topic, 0, sarama.OffsetOldest)
	if err != nil {
		return out, fail("get-offset-oldest", err)
	}
	out["newest"], out["oldest"] = newest, oldest
	return out, nil
}
