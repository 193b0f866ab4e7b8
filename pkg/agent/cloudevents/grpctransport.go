package cloudevents

import (
	"context"
	"fmt"
	"sync"
	"time"

	cloudevents "github.com/cloudevents/sdk-go/v2"
	"github.com/cloudevents/sdk-go/v2/binding"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/constants"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options"
	grpcoptions "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc"
	pbv1 "open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protobuf/v1"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/options/grpc/protocol"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/generic/types"
	"open-cluster-management.io/sdk-go/pkg/cloudevents/server/grpc/heartbeat"
)

// grpcTransport carries the agent's cloudevents to and from OCM's gRPC server: events published by a
// unary call, the works received on one subscription stream. It speaks what sdk-go's transport speaks
// (options/v2/grpc), and differs where that one deadlocks: nothing here holds the transport's lock
// while the server answers. A resync request is taken by OCM's server only once it has queued the
// events of its answer (every work of the cluster, with OCM v1.2.0's server), and those leave its queue
// only as this agent reads the stream; sdk-go v1.2.0's transport holds its lock for the whole Publish
// call and takes it between two events received, so that for a cluster of a couple of hundred works
// the two waited for each other forever (OCM's own agent stalls so too). Here a Send takes the client
// under the lock and calls without it, and the receiver holds what it needs from the start.
type grpcTransport struct {
	opts         *grpcoptions.GRPCOptions
	subscription *pbv1.SubscriptionRequest
	errs         chan error

	mu     sync.Mutex
	client pbv1.CloudEventServiceClient
	stream pbv1.CloudEventService_SubscribeClient
	subID  string
	// closed is closed by Close: it ends the receiver of the connection it was made for.
	closed chan struct{}
}

var _ options.CloudEventTransport = (*grpcTransport)(nil)

// newGRPCTransport is a transport to the server opts names, subscribing with subscription.
func newGRPCTransport(opts *grpcoptions.GRPCOptions, subscription *pbv1.SubscriptionRequest) *grpcTransport {
	return &grpcTransport{opts: opts, subscription: subscription, errs: make(chan error)}
}

// grpcAgentOptions are the agent options of sdk-go's client over this transport, as grpcv2.NewAgentOptions
// makes them over sdk-go's: the works of clusterName, from every source, as dataType.
func grpcAgentOptions(opts *grpcoptions.GRPCOptions, clusterName, agentID string, dataType types.CloudEventsDataType) *options.CloudEventsAgentOptions {
	return &options.CloudEventsAgentOptions{
		CloudEventsTransport: newGRPCTransport(opts, &pbv1.SubscriptionRequest{
			Source: types.SourceAll, ClusterName: clusterName, DataType: dataType.String(),
		}),
		AgentID:     agentID,
		ClusterName: clusterName,
	}
}

func (t *grpcTransport) Connect(ctx context.Context) error {
	conn, err := t.opts.Dialer.Dial()
	if err != nil {
		return fmt.Errorf("dial %s: %w", t.opts.Dialer.URL, err)
	}
	t.mu.Lock()
	t.client = pbv1.NewCloudEventServiceClient(conn)
	t.stream, t.subID = nil, ""
	t.closed = make(chan struct{})
	t.mu.Unlock()
	go t.watchConnection(ctx, conn)
	klog.FromContext(ctx).Info("Connected to the gRPC server", "url", t.opts.Dialer.URL)
	return nil
}

func (t *grpcTransport) Send(ctx context.Context, evt cloudevents.Event) error {
	t.mu.Lock()
	client := t.client
	t.mu.Unlock()
	if client == nil {
		return fmt.Errorf("not connected to the gRPC server")
	}
	pbEvt := &pbv1.CloudEvent{}
	if err := protocol.WritePBMessage(ctx, (*binding.EventMessage)(&evt), pbEvt); err != nil {
		return fmt.Errorf("encode event %s: %w", evt.Type(), err)
	}
	if _, err := client.Publish(ctx, &pbv1.PublishRequest{Event: pbEvt}); err != nil {
		return err
	}
	return nil
}

// subscribeHeaderWait bounds the wait for the error of a subscription the server answered without its
// ID (it refused it before sending headers, as when the agent may not watch its cluster's works).
const subscribeHeaderWait = 5 * time.Second

func (t *grpcTransport) Subscribe(ctx context.Context) error {
	t.mu.Lock()
	client, subscribed := t.client, t.stream != nil
	t.mu.Unlock()
	if client == nil {
		return fmt.Errorf("not connected to the gRPC server")
	}
	if subscribed {
		return fmt.Errorf("already subscribed to the gRPC server")
	}
	stream, err := client.Subscribe(ctx, t.subscription)
	if err != nil {
		return err
	}
	header, err := stream.Header()
	if err != nil {
		return err
	}
	ids := header.Get(constants.GRPCSubscriptionIDKey)
	if len(ids) != 1 {
		// The server refused the subscription: its reason comes with the first receive.
		received := make(chan error, 1)
		go func() {
			_, err := stream.Recv()
			received <- err
		}()
		select {
		case err := <-received:
			if err != nil {
				return err
			}
			return fmt.Errorf("the gRPC server answered the subscription without its ID")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(subscribeHeaderWait):
			_ = stream.CloseSend()
			return fmt.Errorf("the gRPC server answered the subscription without its ID, and no error within %s", subscribeHeaderWait)
		}
	}
	t.mu.Lock()
	t.stream, t.subID = stream, ids[0]
	t.mu.Unlock()
	klog.FromContext(ctx).Info("Subscribed to the gRPC server", "subscription", ids[0], "cluster", t.subscription.ClusterName)
	return nil
}

// Receive hands every event of the subscription to handle until ctx is done or the transport is closed.
func (t *grpcTransport) Receive(ctx context.Context, handle options.ReceiveHandlerFn) error {
	t.mu.Lock()
	stream, subID, closed := t.stream, t.subID, t.closed
	t.mu.Unlock()
	if stream == nil {
		return fmt.Errorf("not subscribed to the gRPC server")
	}
	log := klog.FromContext(ctx).WithValues("subscription", subID)
	receiveCtx, cancel := context.WithCancel(klog.NewContext(ctx, log))
	defer cancel()
	// Without server heartbeats within serverHealthinessTimeout (when the configuration sets one), the
	// checker reports the connection lost on errs, as sdk-go's transport does.
	health := heartbeat.NewHealthChecker(t.opts.ServerHealthinessTimeout, t.errs)
	go t.receive(receiveCtx, stream, subID, closed, health.Input(), handle)
	go health.Start(receiveCtx)
	select {
	case <-ctx.Done():
	case <-closed:
	}
	return nil
}

// receive reads the stream until it fails (reported on errs: the client connects again) or ctx is done
// or closed is closed.
func (t *grpcTransport) receive(ctx context.Context, stream pbv1.CloudEventService_SubscribeClient, subID string,
	closed <-chan struct{}, heartbeats chan<- *pbv1.CloudEvent, handle options.ReceiveHandlerFn) {
	log := klog.FromContext(ctx)
	for {
		pbEvt, err := stream.Recv()
		if err != nil {
			if status.Code(err) == codes.Canceled {
				return // this transport's own doing
			}
			select {
			case t.errs <- fmt.Errorf("the subscription %s to the gRPC server failed: %w", subID, err):
			default:
				log.Error(err, "The subscription to the gRPC server failed")
			}
			return
		}
		if pbEvt.Type == types.HeartbeatCloudEventsType {
			select {
			case heartbeats <- pbEvt:
			case <-ctx.Done():
				return
			}
			continue
		}
		evt, err := binding.ToEvent(ctx, protocol.NewMessage(pbEvt))
		if err != nil {
			log.Error(err, "Dropped an event from the gRPC server that does not decode", "type", pbEvt.Type)
			continue
		}
		handle(ctx, *evt)
		select {
		case <-ctx.Done():
			return
		case <-closed:
			return
		default:
		}
	}
}

func (t *grpcTransport) ErrorChan() <-chan error { return t.errs }

func (t *grpcTransport) Close(ctx context.Context) error {
	t.mu.Lock()
	if t.closed != nil {
		select {
		case <-t.closed:
		default:
			close(t.closed)
		}
	}
	t.stream, t.subID = nil, ""
	t.mu.Unlock()
	klog.FromContext(ctx).V(1).Info("Closing the connection to the gRPC server")
	return t.opts.Dialer.Close()
}

// watchConnection reports the connection lost on errs once gRPC says it failed, was shut down or went
// idle (what a connection does when the server goes away: it is not made again by itself), and closes
// it; the client then connects again with backoff.
func (t *grpcTransport) watchConnection(ctx context.Context, conn *grpc.ClientConn) {
	state := conn.GetState()
	for conn.WaitForStateChange(ctx, state) {
		state = conn.GetState()
		if state != connectivity.TransientFailure && state != connectivity.Shutdown && state != connectivity.Idle {
			continue
		}
		select {
		case t.errs <- fmt.Errorf("the connection to the gRPC server is lost (%s)", state):
		default:
			klog.FromContext(ctx).Info("The connection to the gRPC server is lost, and nothing waits to hear it", "state", state)
		}
		if state != connectivity.Shutdown {
			_ = conn.Close()
		}
		return
	}
}
