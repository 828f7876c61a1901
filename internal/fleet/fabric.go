package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Fabric is a fleet's shared state on NATS JetStream: the node registry,
// the session leases and the session catalog (key-value buckets), and the
// event replica (a stream). Every node opens the same fabric; Open makes
// what is missing and leaves what is there.
type Fabric struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	names  names
	timing Timing

	nodes    jetstream.KeyValue
	leases   jetstream.KeyValue
	sessions jetstream.KeyValue
	events   jetstream.Stream
}

// FabricConfig says which fabric to open.
type FabricConfig struct {
	// Fleet names the fleet (default "corral"): its buckets, stream and
	// subjects start with it.
	Fleet string
	// Replicas is how many NATS servers keep each bucket and the stream
	// (default 3 when the server is part of a cluster, else 1).
	Replicas int
	// EventsMaxBytes bounds the event replica (default: unbounded; the
	// oldest events go first when bounded).
	EventsMaxBytes int64
	Timing         Timing
}

// maxReplicaMsg bounds one message of the event replica: a batch of event
// lines, or one piece of a longer line.
const maxReplicaMsg = 1 << 20

// Open opens the fabric over nc, making its buckets and stream when they
// are missing.
func Open(ctx context.Context, nc *nats.Conn, cfg FabricConfig) (*Fabric, error) {
	if cfg.Fleet == "" {
		cfg.Fleet = "corral"
	}
	if !validToken(cfg.Fleet) {
		return nil, fmt.Errorf("fleet name %q: want 1 to 64 letters, digits, '-' or '_'", cfg.Fleet)
	}
	cfg.Timing = cfg.Timing.WithDefaults()
	if err := cfg.Timing.Check(); err != nil {
		return nil, err
	}
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
		if nc.ConnectedClusterName() != "" {
			cfg.Replicas = 3
		}
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("fleet: jetstream: %w", err)
	}
	f := &Fabric{nc: nc, js: js, names: names{cfg.Fleet}, timing: cfg.Timing}
	t := cfg.Timing
	// Expiry leaves a marker so that every watcher hears of it; markers
	// are kept long enough for a node that reconnects to see them.
	marker := max(t.LeaseTTL, t.NodeTTL)
	if f.nodes, err = f.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: f.names.nodesBucket(), Description: "Corral fleet: nodes and their capacity",
		TTL: t.NodeTTL, LimitMarkerTTL: marker, Replicas: cfg.Replicas, Storage: jetstream.MemoryStorage,
		MaxValueSize: 64 << 10,
	}); err != nil {
		return nil, err
	}
	if f.leases, err = f.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: f.names.leasesBucket(), Description: "Corral fleet: which node holds each live session",
		TTL: t.LeaseTTL, LimitMarkerTTL: marker, Replicas: cfg.Replicas, Storage: jetstream.FileStorage,
		MaxValueSize: 1 << 10,
	}); err != nil {
		return nil, err
	}
	if f.sessions, err = f.bucket(ctx, jetstream.KeyValueConfig{
		Bucket: f.names.sessionsBucket(), Description: "Corral fleet: every session, its node and its placement",
		Replicas: cfg.Replicas, Storage: jetstream.FileStorage, MaxValueSize: 64 << 10,
	}); err != nil {
		return nil, err
	}
	maxBytes := cfg.EventsMaxBytes
	if maxBytes <= 0 {
		maxBytes = -1
	}
	if f.events, err = f.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        f.names.eventsStream(),
		Description: "Corral fleet: every session's events, replicated from its owner's events.jsonl, and lifecycle changes",
		Subjects:    []string{f.names.allEvents(), f.names.allLife()},
		Storage:     jetstream.FileStorage,
		Replicas:    cfg.Replicas,
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxBytes:    maxBytes,
		MaxMsgSize:  maxReplicaMsg + 4<<10,
		Duplicates:  2 * time.Minute,
	}); err != nil {
		return nil, fmt.Errorf("fleet: event stream: %w", err)
	}
	return f, nil
}

func (f *Fabric) bucket(ctx context.Context, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	kv, err := f.js.CreateOrUpdateKeyValue(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("fleet: bucket %s: %w", cfg.Bucket, err)
	}
	return kv, nil
}

// Conn is the fabric's NATS connection.
func (f *Fabric) Conn() *nats.Conn { return f.nc }

// isRevisionMismatch reports a compare-and-set that found another revision
// (or no key) than the one it expected.
func isRevisionMismatch(err error) bool {
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) ||
		isWrongLastSeq(err)
}

func isWrongLastSeq(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// latest reads key's value in bucket from the bucket's stream leader: a
// read that sees every write acknowledged before it, where the key-value
// client's reads may be served by a replica that lags. A deleted or
// expired key is jetstream.ErrKeyNotFound.
func (f *Fabric) latest(ctx context.Context, bucket, key string) ([]byte, uint64, error) {
	value, rev, live, err := f.lastEntry(ctx, bucket, key)
	if err == nil && !live {
		err = jetstream.ErrKeyNotFound
	}
	return value, rev, err
}

// lastEntry reads the last message of key in bucket from the leader: its
// value and revision, and whether it is a value rather than a delete,
// purge or expiry marker. A key never written has revision 0.
func (f *Fabric) lastEntry(ctx context.Context, bucket, key string) (value []byte, rev uint64, live bool, err error) {
	req, _ := json.Marshal(map[string]string{"last_by_subj": "$KV." + bucket + "." + key})
	var msg *nats.Msg
	err = f.retry(ctx, func(ctx context.Context) error {
		var err error
		msg, err = f.nc.RequestWithContext(ctx, "$JS.API.STREAM.MSG.GET.KV_"+bucket, req)
		if err == nil && bytes.Contains(msg.Data, []byte(`"code":503`)) {
			err = jetstream.ErrNoStreamResponse // no leader yet
		}
		return err
	})
	if err != nil {
		return nil, 0, false, err
	}
	var resp struct {
		Error   *jetstream.APIError `json:"error"`
		Message *struct {
			Seq  uint64 `json:"seq"`
			Hdrs []byte `json:"hdrs"`
			Data []byte `json:"data"`
		} `json:"message"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return nil, 0, false, fmt.Errorf("read %s/%s: %w", bucket, key, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeMessageNotFound {
			return nil, 0, false, nil
		}
		return nil, 0, false, resp.Error
	}
	if resp.Message == nil {
		return nil, 0, false, fmt.Errorf("read %s/%s: an empty answer", bucket, key)
	}
	if len(resp.Message.Hdrs) > 0 {
		hdr, err := nats.DecodeHeadersMsg(resp.Message.Hdrs)
		if err == nil && (hdr.Get("KV-Operation") != "" || hdr.Get(jetstream.MarkerReasonHeader) != "") {
			return nil, resp.Message.Seq, false, nil // deleted, purged or expired
		}
	}
	return resp.Message.Data, resp.Message.Seq, true, nil
}

// create writes key in bucket if it holds no value (never written,
// deleted or expired), with a compare-and-set on what the leader says is
// there: the key-value client's own Create reads a replica, which may not
// have seen a delete yet, and then refuses a key that is free.
func (f *Fabric) create(ctx context.Context, bucket, key string, value []byte) (uint64, error) {
	_, rev, live, err := f.lastEntry(ctx, bucket, key)
	if err != nil {
		return 0, err
	}
	if live {
		return 0, jetstream.ErrKeyExists
	}
	ack, err := f.js.PublishMsg(ctx, &nats.Msg{Subject: "$KV." + bucket + "." + key, Data: value},
		jetstream.WithExpectLastSequencePerSubject(rev))
	if err != nil {
		if isWrongLastSeq(err) {
			return 0, jetstream.ErrKeyExists // written meanwhile
		}
		return 0, err
	}
	return ack.Sequence, nil
}

// watchBucket hands every entry of kv to apply, the values already there
// first, until ctx ends; ready is closed once those are in.
func watchBucket(ctx context.Context, kv jetstream.KeyValue, what string, ready chan<- struct{}, apply func(jetstream.KeyValueEntry)) error {
	w, err := kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("fleet: watch %s: %w", what, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case e, ok := <-w.Updates():
			if !ok {
				return nil
			}
			if e == nil { // the values already there are all in
				if ready != nil {
					close(ready)
					ready = nil
				}
				continue
			}
			apply(e)
		}
	}
}
