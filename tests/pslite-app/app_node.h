// app_node.h: how a PS-lite node of the apps in this directory runs, once ps::Start is done:
// the part of its role (server, worker or scheduler), then Finalize.
#ifndef ZEBRA_PSLITE_APP_NODE_H_
#define ZEBRA_PSLITE_APP_NODE_H_

#include "ps/ps.h"

namespace app_node {

// Serves *handler (a Handle(meta, data, server) member) as app 0's request handle until
// every node has called Finalize: a KVServer<float>, then the barrier of workers and
// servers (every node's app exists), then Finalize. The handler's checks come after.
template <class Handler>
void ServeUntilFinalize(Handler* handler) {
  auto* server = new ps::KVServer<float>(0);
  server->set_request_handle(
      [handler](const ps::KVMeta& meta, const ps::KVPairs<float>& data, ps::KVServer<float>* srv) {
        handler->Handle(meta, data, srv);
      });
  ps::Postoffice::Get()->Barrier(0, ps::kWorkerGroup + ps::kServerGroup);  // every app exists
  ps::Finalize(0, true);
  delete server;
}

// Runs this node's role and returns its exit code: a server's serve(rank) (which serves
// until Finalize, with ServeUntilFinalize), a worker's work(rank) followed by Finalize, or
// the scheduler's Finalize alone (0).
template <class Serve, class Work>
int RunRole(Serve serve, Work work) {
  int rc = 0;
  if (ps::IsServer()) {
    rc = serve(ps::MyRank());
  } else if (ps::IsWorker()) {
    rc = work(ps::MyRank());
    ps::Finalize(0, true);
  } else {
    ps::Finalize(0, true);
  }
  return rc;
}

}  // namespace app_node

#endif  // ZEBRA_PSLITE_APP_NODE_H_
