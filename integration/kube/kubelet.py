"""Simulated kubelet for the test API server: pod phases and graceful termination.

``Kubelet`` (``--controllers kubelet``) plays the kubelet of every node at once.
For each pod with ``spec.nodeName`` (bound by the scheduler or created bound):
* after ``--kubelet-start-delay`` seconds (default 0.2) it writes, through the
  status subresource, phase ``Running``, ``startTime``, ``hostIP``/``podIP``,
  running ``containerStatuses`` and the conditions PodReadyToStartContainers,
  Initialized, ContainersReady and Ready (all True); a pod annotated
  ``fixture.admitd.io/unready: "true"`` runs as one whose readiness probe keeps
  failing: its containers are running but not ready, and ContainersReady and
  Ready are False with reason ContainersNotReady;
* the containers then run for the seconds in the pod annotation
  ``fixture.admitd.io/runtime-seconds`` (absent: until the pod is deleted) and
  exit with ``fixture.admitd.io/exit-code`` (default 0). With restartPolicy
  Never, or OnFailure and exit code 0, the pod becomes ``Succeeded`` (exit 0)
  or ``Failed``; otherwise the container restarts (restartCount + 1) and runs
  again;
* graceful deletion: once the pod has a deletionTimestamp, the containers are
  killed after min(deletionGracePeriodSeconds, ``--kubelet-grace-cap``) seconds
  (default cap 1 s, so that tests do not wait 30 s): the pod becomes ``Failed``
  with exit code 143 (a process killed by SIGTERM) unless it had already
  finished, and the kubelet then sends the final DELETE with grace period 0
  (the object goes away once its finalizers are gone).
A pod whose node does not exist is left alone (as no kubelet would see it).
"""

import hashlib
import time

import controllers
from errors import ApiError
from kcommon import MATCH_ALL, now_rfc3339, pod_terminal
from resources import RES_BY_KEY

PODS = RES_BY_KEY["pods"]
NODES = RES_BY_KEY["nodes"]
RUNTIME_ANNOTATION = "fixture.admitd.io/runtime-seconds"
EXIT_CODE_ANNOTATION = "fixture.admitd.io/exit-code"
UNREADY_ANNOTATION = "fixture.admitd.io/unready"



def _hex(*parts, n=64):
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def _cond(ctype, status, now, reason=None):
    c = {"type": ctype, "status": status, "lastProbeTime": None, "lastTransitionTime": now}
    if reason:
        c["reason"] = reason
    return c


class Kubelet(controllers.Controller):
    """Runs bound pods on their fake nodes (see the module docstring)."""

    NAME = "kubelet"
    KINDS = ("Pod",)

    def __init__(self, app):
        self.start_delay = getattr(app, "kubelet_start_delay", 0.2)
        self.grace_cap = getattr(app, "kubelet_grace_cap", 1.0)
        self.state = {}  # pod uid -> {"bound": t, "running": t, "finish": t, "kill": t}
        super().__init__(app)

    def initial_keys(self):
        pods, _ = self.store.list(PODS, None, MATCH_ALL, MATCH_ALL)
        return [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in pods
                if (p.get("spec") or {}).get("nodeName")]

    def keys_for(self, event):
        m = event.obj["metadata"]
        if event.type == "DELETED":
            self.state.pop(m["uid"], None)
            return []
        if not (event.obj.get("spec") or {}).get("nodeName"):
            return []
        return [(m["namespace"], m["name"])]

    def sync(self, key):
        ns, name = key
        pod = self.get(PODS, ns, name)
        if pod is None or not pod["spec"].get("nodeName"):
            return
        if self.get(NODES, None, pod["spec"]["nodeName"]) is None:
            return
        m, now = pod["metadata"], time.time()
        st = self.state.setdefault(m["uid"], {"bound": now})
        phase = (pod.get("status") or {}).get("phase", "Pending")
        if m.get("deletionTimestamp"):
            if (m.get("deletionGracePeriodSeconds") or 0) == 0 and pod_terminal(pod):
                return  # final delete done; finalizers hold the object
            if "kill" not in st:
                grace = m.get("deletionGracePeriodSeconds") or 0
                st["kill"] = now + min(max(grace, 0), self.grace_cap)
            if now < st["kill"]:
                self.after(st["kill"] - now, key)
                return
            if not pod_terminal(pod):
                self._terminate(pod, 143, "Error", killed=True)
            self.delete(PODS, ns, name, m["uid"], grace=0)
            return
        if phase == "Pending":
            due = st["bound"] + self.start_delay
            if now < due:
                self.after(due - now, key)
                return
            pod = self._run(pod)
            st["running"] = now
            st.pop("finish", None)
            phase = "Running"
        if phase == "Running":
            runtime = (m.get("annotations") or {}).get(RUNTIME_ANNOTATION)
            if runtime is None:
                return
            if "finish" not in st:
                try:
                    st["finish"] = st.get("running", now) + float(runtime)
                except ValueError:
                    return
            if now < st["finish"]:
                self.after(st["finish"] - now, key)
                return
            try:
                code = int((m.get("annotations") or {}).get(EXIT_CODE_ANNOTATION, "0"))
            except ValueError:
                code = 1
            policy = pod["spec"].get("restartPolicy", "Always")
            if policy == "Never" or (policy == "OnFailure" and code == 0):
                self._terminate(pod, code, "Completed" if code == 0 else "Error")
            else:
                self._restart(pod, code)
                st["running"] = now
                st.pop("finish", None)
                self.after(float(runtime), key)

    # ------------------------------------------------------------ statuses
    def _run(self, pod):
        now = now_rfc3339()
        m, spec = pod["metadata"], pod["spec"]
        node = self.get(NODES, None, spec["nodeName"]) or {}
        host_ip = next((a.get("address") for a in (node.get("status") or {}).get("addresses")
                        or [] if a.get("type") == "InternalIP"), "10.0.0.2")
        h = int(_hex(m["uid"], n=4), 16)
        status = dict(pod.get("status") or {})
        status.update({
            "phase": "Running", "startTime": now, "hostIP": host_ip,
            "hostIPs": [{"ip": host_ip}],
            "podIP": "10.244.%d.%d" % (h // 256 % 256, h % 254 + 1)})
        status["podIPs"] = [{"ip": status["podIP"]}]
        conds = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        ready = (m.get("annotations") or {}).get(UNREADY_ANNOTATION) != "true"
        if ready:
            conds += [_cond("PodReadyToStartContainers", "True", now),
                      _cond("Initialized", "True", now), _cond("Ready", "True", now),
                      _cond("ContainersReady", "True", now)]
        else:
            # What the kubelet writes while a readiness probe fails.
            names = ",".join(c.get("name", "") for c in spec.get("containers") or [])
            unready = dict(reason="ContainersNotReady",
                           message="containers with unready status: [%s]" % names)
            conds += [_cond("PodReadyToStartContainers", "True", now),
                      _cond("Initialized", "True", now),
                      dict(_cond("Ready", "False", now), **unready),
                      dict(_cond("ContainersReady", "False", now), **unready)]
        status["conditions"] = conds
        status["containerStatuses"] = [{
            "name": c.get("name"), "image": c.get("image"),
            "imageID": "docker.io/library/%s@sha256:%s" % (
                (c.get("image") or "").split(":")[0].rsplit("/", 1)[-1], _hex(c.get("image", ""))),
            "containerID": "containerd://" + _hex(m["uid"], c.get("name", "")),
            "ready": ready, "started": True, "restartCount": 0,
            "state": {"running": {"startedAt": now}}} for c in spec.get("containers") or []]
        return self.write_status(PODS, pod, status)

    def _restart(self, pod, code):
        now = now_rfc3339()
        status = dict(pod.get("status") or {})
        out = []
        for cs in status.get("containerStatuses") or []:
            cs = dict(cs)
            started = (cs.get("state") or {}).get("running", {}).get("startedAt", now)
            cs["lastState"] = {"terminated": {"exitCode": code, "reason": "Completed" if code == 0
                                              else "Error", "startedAt": started,
                                              "finishedAt": now,
                                              "containerID": cs.get("containerID")}}
            cs["restartCount"] = int(cs.get("restartCount", 0)) + 1
            cs["state"] = {"running": {"startedAt": now}}
            out.append(cs)
        status["containerStatuses"] = out
        self.write_status(PODS, pod, status)

    def _terminate(self, pod, code, reason, killed=False):
        now = now_rfc3339()
        status = dict(pod.get("status") or {})
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        why = "PodCompleted" if code == 0 else "PodFailed"
        conds = []
        for c in status.get("conditions") or []:
            c = dict(c)
            if c.get("type") in ("Ready", "ContainersReady", "PodReadyToStartContainers"):
                if c.get("status") != "False":
                    c["lastTransitionTime"] = now
                c["status"] = "False"
                if c["type"] != "PodReadyToStartContainers":
                    c["reason"] = why
            conds.append(c)
        status["conditions"] = conds
        out = []
        for cs in status.get("containerStatuses") or [{
                "name": c.get("name"), "image": c.get("image"), "restartCount": 0,
                "state": {}} for c in pod["spec"].get("containers") or []]:
            cs = dict(cs)
            started = (cs.get("state") or {}).get("running", {}).get("startedAt")
            term = {"exitCode": code, "reason": reason, "finishedAt": now}
            if started:
                term["startedAt"] = started
            if cs.get("containerID"):
                term["containerID"] = cs["containerID"]
            cs.update({"ready": False, "started": False, "state": {"terminated": term}})
            out.append(cs)
        status["containerStatuses"] = out
        try:
            return self.write_status(PODS, pod, status)
        except ApiError as e:
            if killed and e.code == 404:
                return None
            raise
