"""Every helper of admitd.Client against a real admitd."""

import grpc
import pytest

import admitd
from admitd.v1 import objects_pb2 as obj
from conftest import workload

NS = "team"


def test_submit_from_yaml_dict_and_message_is_idempotent(client):
    wl = client.submit(workload("a"))
    assert (wl.metadata.namespace, wl.metadata.name) == (NS, "a")
    assert wl.spec.pod_sets[0].template.spec.containers[0].resources.requests["cpu"] == "1"
    # A dict in Kueue's shape, and admitd's own message.
    d = {"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
         "metadata": {"name": "b", "namespace": NS},
         "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 1, "template": {
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": 1}}}]}}}]}}
    assert client.submit(d).metadata.name == "b"
    again = client.submit(wl)
    assert again.metadata.uid == wl.metadata.uid  # the same workload: nothing new
    # admitd's JSON shape (the proto's fields), with the namespace given apart.
    c = client.submit({"metadata": {"name": "c"}, "spec": {"queueName": "lq", "podSets": [
        {"name": "main", "count": 1}]}}, namespace=NS)
    assert c.metadata.namespace == NS


def test_get_list_pages_and_delete(client):
    for i in range(5):
        client.submit(workload("w%d" % i, cpu="100m"))
    assert client.get("w3", NS).metadata.name == "w3"
    listing = client.list_workloads(namespace=NS, page_size=2)
    assert listing.revision is None  # nothing read yet
    names = [w.metadata.name for w in listing]
    assert sorted(names) == ["w0", "w1", "w2", "w3", "w4"]
    # A watch from the list's revision sees what changed after it, and nothing before.
    watch = client.watch(since_revision=listing.revision, kinds=["Workload"], namespace=NS)
    client.submit(workload("w5", cpu="100m"))
    for ev in watch:
        if ev.HasField("workload"):
            assert ev.workload.metadata.name == "w5"
            break
    watch.cancel()
    client.delete("w3", NS)
    with pytest.raises(admitd.AdmitdError) as e:
        client.get("w3", NS)
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    assert e.value.reason == "NOT_FOUND"


def test_wait_admitted_and_a_timeout_that_says_why(client):
    client.submit(workload("fits", cpu="3"))
    wl = client.wait_admitted("fits", NS, timeout=10)
    assert wl.status.admission.cluster_queue == "cq"
    client.submit(workload("big", cpu="3"))
    with pytest.raises(admitd.WaitTimeout) as e:
        client.wait_admitted("big", NS, timeout=0.5)
    assert isinstance(e.value, TimeoutError)
    assert e.value.state == "WORKLOAD_STATE_PENDING"
    assert "insufficient unused quota" in e.value.pending_message
    assert "couldn't assign flavors" in client.explain("big", NS).message or \
        not client.explain("big", NS).would_admit


def test_release_finished_stopped_and_reclaimable(client):
    client.submit(workload("job", cpu="1", count=2))
    client.wait_admitted("job", NS, timeout=10)
    wl = client.release("job", NS, reclaimable={"main": 1})
    assert [(r.name, r.count) for r in wl.status.reclaimable_pods] == [("main", 1)]
    wl = client.release("job", NS, finished=True, message="all done")
    finished = [c for c in wl.status.conditions if c.type == "Finished"][0]
    assert (finished.status, finished.reason, finished.message) == ("True", "Succeeded", "all done")
    with pytest.raises(ValueError):
        client.release("job", NS)  # none of finished / stopped / reclaimable
    with pytest.raises(ValueError):
        client.release("job", NS, finished=True, stopped=True)


def test_deactivate_evicts_and_activate_requeues(client):
    client.submit(workload("x"))
    client.wait_admitted("x", NS, timeout=10)
    client.deactivate("x", NS)
    wl = client.get("x", NS)
    assert not wl.spec.active
    client.release("x", NS, stopped=True)
    client.activate("x", NS)
    assert client.wait_admitted("x", NS, timeout=10).spec.active


def test_resize_elastic_in_place_and_replace_the_others(client):
    outcome = admitd.admission_service_pb2.ResizeResponse
    client.submit(workload("e", cpu="1", count=3, elastic=True))
    client.wait_admitted("e", NS, timeout=10)
    resp = client.resize({"main": 2}, name="e", namespace=NS)
    assert resp.outcome == outcome.UPDATED_IN_PLACE
    assert client.get("e", NS).spec.pod_sets[0].count == 2
    assert client.resize({"main": 2}, name="e", namespace=NS).outcome == outcome.UNCHANGED
    # Not elastic: the workload queues again with its new counts.
    client.submit(workload("r", cpu="100m", count=2))
    client.wait_admitted("r", NS, timeout=10)
    assert client.resize({"main": 1}, name="r", namespace=NS).outcome == outcome.REPLACED
    with pytest.raises(ValueError):
        client.resize({}, name="r", namespace=NS)


def test_queue_objects_apply_get_list_delete(client):
    results = client.apply("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq2}
spec: {clusterQueue: cq}
""")
    assert [(r.kind, r.name, r.action) for r in results] == [("LocalQueue", "lq2", "created")]
    assert client.apply(results and """
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: lq2}
spec: {clusterQueue: cq}
""")[0].action == "unchanged"
    lq = client.get_object("LocalQueue", "lq2", NS)
    assert lq.local_queue.spec.cluster_queue == "cq"
    assert {o.local_queue.metadata.name for o in client.list_objects("lq", NS)} == {"lq", "lq2"}
    assert [o.cluster_queue.metadata.name for o in client.list_objects("clusterqueues")] == ["cq"]
    client.delete_object("localqueue", "lq2", NS)
    with pytest.raises(admitd.AdmitdError) as e:
        client.get_object("LocalQueue", "lq2", NS)
    assert e.value.code == grpc.StatusCode.NOT_FOUND
    with pytest.raises(ValueError):
        client.get_object("Deployment", "x")


def test_errors_carry_the_field_violations(client):
    bad = obj.Workload()
    bad.metadata.name = "bad"
    bad.metadata.namespace = NS
    bad.spec.queue_name = "lq"
    ps = bad.spec.pod_sets.add(name="main", count=-1)
    del ps
    with pytest.raises(admitd.AdmitdError) as e:
        client.submit(bad)
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    fields = {v.field for v in e.value.field_violations}
    assert any("podSets[0].count" in f for f in fields), e.value.field_violations
    # A manifest admitd cannot read: every problem, by document and field.
    with pytest.raises(admitd.AdmitdError) as e:
        client.apply("""
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: broken}
spec: {resourceGroups: [{coveredResources: [cpu], flavorz: []}]}
""", source="queues.yaml")
    assert e.value.code == grpc.StatusCode.INVALID_ARGUMENT
    assert "queues.yaml: document 1 (ClusterQueue \"broken\")" in e.value.message
    assert [v.field for v in e.value.field_violations] == ["documents[0].spec.resourceGroups[0].flavorz"]
    assert e.value.field_violations[0].description == "unknown field"
    # Nothing was applied.
    with pytest.raises(admitd.AdmitdError):
        client.get_object("ClusterQueue", "broken")


def test_the_environment_gives_the_target(server, monkeypatch):
    monkeypatch.setenv("ADMITD_SERVER", server.address)
    with admitd.Client() as c:
        c.ping()
        assert c.options.target == server.address


def test_pods_ready_and_admission_checks_are_reported(server):
    with admitd.Client(server.address) as c:
        c.apply((__import__("conftest").QUEUES % {"cpu": 4}) + """
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata: {name: prov}
spec: {controllerName: example.com/provisioner}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: checked}
spec:
  namespaceSelector: {}
  admissionChecksStrategy: {admissionChecks: [{name: prov}]}
  resourceGroups:
  - coveredResources: [cpu]
    flavors: [{name: default-flavor, resources: [{name: cpu, nominalQuota: 4}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata: {namespace: team, name: checked}
spec: {clusterQueue: checked}
""")
        c.submit(workload("chk", queue="checked"))
        with pytest.raises(admitd.WaitTimeout):
            c.wait_admitted("chk", NS, timeout=0.5)  # quota reserved, the check pending
        wl = c.check("chk", "prov", "Ready", NS, message="provisioned")
        assert [s.state for s in wl.status.admission_checks] == ["Ready"]
        assert c.wait_admitted("chk", NS, timeout=10).metadata.name == "chk"
        # Without waitForPodsReady configured, admitd says why it takes no report.
        with pytest.raises(admitd.AdmitdError) as e:
            c.report_pods_ready("chk", NS, ready=True)
        assert (e.value.code, e.value.reason) == (grpc.StatusCode.FAILED_PRECONDITION,
                                                  "WAIT_FOR_PODS_READY_DISABLED")


def test_calls_carry_the_current_trace_context(client, monkeypatch):
    import admitd._tracing as tracing

    class Propagate:  # what opentelemetry.propagate.inject does with a span in context
        @staticmethod
        def inject(carrier):
            carrier["traceparent"] = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"

    assert tracing.metadata() == [] or tracing._propagate is not None
    monkeypatch.setattr(tracing, "_propagate", Propagate)
    assert tracing.metadata() == [
        ("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")]
    # What the calls send (an interceptor on the client's channel sees each call's metadata).
    seen = []

    class Record(grpc.UnaryUnaryClientInterceptor):
        def intercept_unary_unary(self, continuation, details, request):
            seen.append(dict(details.metadata or ()))
            return continuation(details, request)

    from admitd.v1 import admission_service_pb2_grpc, queue_service_pb2_grpc
    channel = grpc.intercept_channel(client._channel, Record())
    client._stubs = {"admission": admission_service_pb2_grpc.AdmissionServiceStub(channel),
                     "queues": queue_service_pb2_grpc.QueueServiceStub(channel)}
    client.ping()  # admitd takes it as the parent of its spans
    assert client.submit(workload("traced")).metadata.name == "traced"
    assert len(seen) >= 3  # Ping, ParseManifests, Submit
    assert all(m.get("traceparent", "").startswith("00-0af76519") for m in seen)


def test_scheduling_cycles_on_demand():
    import tempfile
    from conftest import QUEUES, Admitd
    with tempfile.TemporaryDirectory() as tmp:
        server = Admitd(tmp, ["--manual-scheduling"])
        server.start()
        try:
            with admitd.Client(server.address) as c:
                c.apply(QUEUES % {"cpu": 4})
                c.submit(workload("m"))
                assert c.admit("m", NS).state == obj.WORKLOAD_STATE_PENDING  # no cycle ran
                ran = c.cycles(2)
                assert (ran.cycles_run, ran.admitted) == (2, 1)
                assert c.admit("m", NS).admitted
        finally:
            server.stop()
