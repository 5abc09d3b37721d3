// A Producer API client on the archived shipper's own Go client library
// (github.com/elastic/elastic-agent-shipper-client, at the version the archived shipper pinned),
// used as libbeat's shipper output used it: PublishEvents with the server's uuid, a
// PersistedIndex stream that says which accepted events are safe, and, when the uuid changes (the
// shipper restarted), a rewind to the first event not yet persisted and a resend from there.
//
// It publishes --events events numbered by the field "seq" (0 .. events-1) to --address and exits
// 0 once every one of them is persisted, printing one JSON line: the events published, the
// resent ones, the rewinds and every uuid seen. A uuid change is learnt from either side, as
// libbeat did: PublishEvents answering FAILED_PRECONDITION, or the index stream's reply.
//
//	producer_go --address=unix:///tmp/shipper.sock --events=100000 --batch=500
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"sync"
	"time"

	pb "github.com/elastic/elastic-agent-shipper-client/pkg/proto"
	"github.com/elastic/elastic-agent-shipper-client/pkg/proto/messages"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// pending is a published range the server accepted but has not yet said is persisted.
type pending struct {
	first, end int    // seqs [first, end)
	index      uint64 // the server's accepted_index for the range's last event
}

// state is shared by the publisher and the index follower; mu guards all of it.
type state struct {
	mu      sync.Mutex
	changed *sync.Cond
	uuid    string    // the server's uuid as last learnt; "" until the first reply
	gen     int       // bumped by every rewind: replies to calls sent before one are dropped
	pending []pending // in publishing order
	next    int       // the next seq to publish
	events  int
	window  int // most events accepted and not yet persisted before the publisher waits

	published, resent, rewinds int
	uuids                      []string
}

// rewind forgets every range not yet persisted and publishes again from its first seq, to the
// server `uuid` (or to whichever answers, when ""). Called with mu held.
func (s *state) rewind(uuid string) {
	if len(s.pending) > 0 {
		s.resent += s.next - s.pending[0].first
		s.next = s.pending[0].first
	}
	s.pending = nil
	s.rewinds++
	s.gen++
	s.learn(uuid)
	s.changed.Broadcast()
}

// learn records the server's uuid. Called with mu held.
func (s *state) learn(uuid string) {
	s.uuid = uuid
	if uuid != "" && (len(s.uuids) == 0 || s.uuids[len(s.uuids)-1] != uuid) {
		s.uuids = append(s.uuids, uuid)
	}
}

func (s *state) done() bool { return s.next >= s.events && len(s.pending) == 0 }

func (s *state) unpersisted() int {
	if len(s.pending) == 0 {
		return 0
	}
	return s.next - s.pending[0].first
}

func event(seq int) *messages.Event {
	return &messages.Event{
		Timestamp:  timestamppb.New(time.Unix(1700000000+int64(seq), 0)),
		Source:     &messages.Source{InputId: "producer-go", StreamId: "peers"},
		DataStream: &messages.DataStream{Type: "logs", Dataset: "producer_go", Namespace: "default"},
		Fields: &messages.Struct{Data: map[string]*messages.Value{
			"seq":     {Kind: &messages.Value_Uint64Value{Uint64Value: uint64(seq)}},
			"message": {Kind: &messages.Value_StringValue{StringValue: fmt.Sprintf("event %d from the Go client", seq)}},
		}},
	}
}

// publish sends batches until every event is persisted, at most `rate` events a second (0: no
// limit) counted from the first.
func publish(ctx context.Context, client pb.ProducerClient, s *state, batch int, rate float64) {
	start := time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.done() && ctx.Err() == nil {
		if s.next >= s.events || s.unpersisted() >= s.window {
			s.changed.Wait()
			continue
		}
		first, end := s.next, s.next+batch
		if end > s.events {
			end = s.events
		}
		uuid, gen, published := s.uuid, s.gen, s.published
		s.mu.Unlock()
		if rate > 0 {
			time.Sleep(time.Until(start.Add(time.Duration(float64(published) / rate * float64(time.Second)))))
		}
		req := &messages.PublishRequest{Uuid: uuid}
		for seq := first; seq < end; seq++ {
			req.Events = append(req.Events, event(seq))
		}
		callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
		reply, err := client.PublishEvents(callCtx, req)
		cancel()
		s.mu.Lock()
		if gen != s.gen {
			continue // a rewind came first: this range is published again from its start
		}
		if err != nil {
			if status.Code(err) == codes.FailedPrecondition {
				s.rewind("") // the server restarted: the next reply says its uuid
				continue
			}
			// Unavailable while it restarts, or a deadline: the same batch again.
			s.mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			s.mu.Lock()
			continue
		}
		if uuid == "" {
			s.learn(reply.Uuid)
		}
		accepted := int(reply.AcceptedCount) // fewer when the queue is full: the rest again
		if accepted > 0 {
			s.pending = append(s.pending, pending{first, first + accepted, reply.AcceptedIndex})
			s.next = first + accepted
			s.published += accepted
		} else {
			s.mu.Unlock()
			time.Sleep(5 * time.Millisecond)
			s.mu.Lock()
		}
	}
}

// follow reads the PersistedIndex stream, reconnecting when it breaks, until every event is
// persisted: it forgets the ranges persisted and rewinds when the stream's uuid is new.
func follow(ctx context.Context, client pb.ProducerClient, s *state, poll time.Duration) {
	for {
		stream, err := client.PersistedIndex(ctx, &messages.PersistedIndexRequest{
			PollingInterval: durationpb.New(poll)})
		for err == nil {
			var reply *messages.PersistedIndexReply
			if reply, err = stream.Recv(); err != nil {
				break
			}
			s.mu.Lock()
			switch {
			case s.uuid == "":
				s.learn(reply.Uuid)
			case reply.Uuid != s.uuid:
				s.rewind(reply.Uuid)
			}
			if reply.Uuid == s.uuid {
				n := 0
				for n < len(s.pending) && s.pending[n].index <= reply.PersistedIndex {
					n++
				}
				if n > 0 {
					s.pending = s.pending[n:]
					s.changed.Broadcast()
				}
			}
			done := s.done()
			s.mu.Unlock()
			if done {
				return
			}
		}
		if ctx.Err() != nil {
			return
		}
		time.Sleep(20 * time.Millisecond) // the server is restarting
	}
}

func main() {
	address := flag.String("address", "", "the shipper's Producer API: host:port or unix:///path")
	events := flag.Int("events", 100000, "events to publish")
	batch := flag.Int("batch", 500, "events per PublishRequest")
	window := flag.Int("window", 20000, "most events accepted but not yet persisted")
	poll := flag.Duration("poll", 20*time.Millisecond, "PersistedIndex polling interval")
	rate := flag.Float64("rate", 0, "events published per second at most (0: no limit)")
	timeout := flag.Duration("timeout", 5*time.Minute, "give up after this long")
	flag.Parse()
	if *address == "" || *events <= 0 || *batch <= 0 || *window < *batch {
		fmt.Fprintln(os.Stderr, "producer_go: --address is required; --events, --batch > 0; --window >= --batch")
		os.Exit(2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	// Reconnect quickly while the shipper restarts (gRPC's default backoff grows to 120 s).
	conn, err := grpc.Dial(*address, grpc.WithInsecure(), grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond},
	}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "producer_go: dial:", err)
		os.Exit(1)
	}
	defer conn.Close()
	client := pb.NewProducerClient(conn)
	s := &state{events: *events, window: *window}
	s.changed = sync.NewCond(&s.mu)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); follow(ctx, client, s, *poll) }()
	go func() { // wakes the publisher when time is up
		<-ctx.Done()
		s.mu.Lock()
		s.changed.Broadcast()
		s.mu.Unlock()
	}()
	publishDone := make(chan struct{})
	go func() { publish(ctx, client, s, *batch, *rate); close(publishDone) }()
	select {
	case <-publishDone:
	case <-ctx.Done():
	}
	wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	summary, _ := json.Marshal(map[string]interface{}{
		"events": s.events, "published": s.published, "resent": s.resent, "rewinds": s.rewinds,
		"uuids": s.uuids, "persisted": s.done(),
	})
	fmt.Println(string(summary))
	if !s.done() {
		fmt.Fprintf(os.Stderr, "producer_go: timed out with %d events not yet persisted\n",
			s.events-s.next+s.unpersisted())
		os.Exit(1)
	}
}
