"""Security end to end: the challenge-response handshake of RPC, data and
blob connections (a replayed handshake captured from a real one, through a
proxy between real processes, is refused on each port), control frames from
unauthenticated or remote peers refused with a clear log line while the
cluster keeps running, the access log of a peer flooding controls
rate-limited, and no secret on a command line or in `spate config`'s
output."""

import hashlib
import hmac
import os
import re
import socket
import struct
import threading
import unittest
import base64
import json
import urllib.error
import urllib.request

from clustertest import TESTJOBS as TESTJOBS_PATH, ClusterTestCase, job_id_of, wait_for

HS = 256
MAGIC_RPC = 0x53505243
MAGIC_DATA = 0x53504454
MAGIC_BLOB = 0x5350424C


def read_exactly(s, n):
    got = b""
    while len(got) < n:
        chunk = s.recv(n - len(got))
        if not chunk:
            raise ConnectionError(f"closed after {len(got)} of {n} bytes")
        got += chunk
    return got


def read_to_eof(s):
    """Everything until the peer closes (the connection must be closed)."""
    got = b""
    while True:
        try:
            chunk = s.recv(65536)
        except ConnectionResetError:
            return got
        if not chunk:
            return got
        got += chunk


def proof(secret, label, magic, cluster, ns, nc):
    msg = (label.ljust(16, b"\0") + struct.pack(">I", magic) + cluster.ljust(64, b"\0")
           + ns + nc)
    return hmac.new(secret, msg, hashlib.sha256).digest()


def hello(challenge, magic=MAGIC_RPC, cluster=b"spate", secret=None):
    """The hello answering challenge: with the proof of secret, or none."""
    ns = challenge[72:104]
    nc = os.urandom(32)
    flags = 1 if secret else 0
    p = proof(secret, b"spate-hs2 client", magic, cluster, ns, nc) if secret else bytes(32)
    return (struct.pack(">IHBB", magic, 2, 0, flags) + cluster.ljust(64, b"\0") + nc + p
            + bytes(120))


def frame(kind, method, target, payload=b"", call_id=7):
    """An RPC frame: kind 1 ask, 2 tell."""
    t = target.encode()
    body = struct.pack(">BBHQ", 1, kind, method, call_id) + bytes(16) + bytes([len(t)]) + t
    return struct.pack(">I", len(body) + len(payload)) + body + payload


def job_id_payload(jid):
    return b"\x0a\x10" + bytes.fromhex(jid)


TERMINAL = ("FINISHED", "FAILED", "CANCELED")

# The control frames of issue 29, each as an unauthenticated peer would send
# them: (what, method id, endpoint, payload or a function of the job id).
DISPATCHER_SHUTDOWN = (0x0603, "dispatcher")
DISPATCHER_CANCEL = (0x0605, "dispatcher")
RM_REGISTER = (0x0301, "resourcemanager")
TE_STOP = (0x0405, None)  # the TaskExecutor's own name
TE_CANCEL = 0x0407  # te.cancel_task


class Recorder:
    """A TCP proxy on 127.0.0.1 that records what clients send through it,
    to target_port on target_host; without target_port, to its own port on
    target_host (a process that binds there and announces 127.0.0.1 is then
    reached through the proxy: see behind_proxy)."""

    def __init__(self, target_port=None, target_host="127.0.0.1"):
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.target = (target_host, target_port if target_port is not None else self.port)
        self.sent = []  # bytes each client sent, per connection
        self.lock = threading.Lock()
        self.stopped = False
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while not self.stopped:
            try:
                c, _ = self.listener.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(self.target)
            except OSError:  # the target is gone (the test ends): so is this client
                c.close()
                continue
            with self.lock:
                self.sent.append(bytearray())
                rec = self.sent[-1]
            threading.Thread(target=self.pipe, args=(c, u, rec), daemon=True).start()
            threading.Thread(target=self.pipe, args=(u, c, None), daemon=True).start()

    @staticmethod
    def pipe(a, b, rec):
        try:
            while True:
                d = a.recv(65536)
                if not d:
                    break
                if rec is not None:
                    rec.extend(d)
                b.sendall(d)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        if rec is not None:
            a.close()  # each pair's recording pipe closes both
            b.close()

    def close(self):
        self.stopped = True
        self.listener.close()


class SecurityTest(ClusterTestCase):

    def setUp(self):
        super().setUp()
        # A secret file of this test's own, made by the first daemon.
        self.secret_file = os.path.join(self.tmp, "home", ".spate", "secret")
        self.conf = ["-D", f"security.rpc.secret-file={self.secret_file}"]

    def secret(self):
        with open(self.secret_file, "rb") as f:
            return f.read().strip()

    def start_cluster(self, taskmanagers=1, slots=2):
        jm = self.start_jobmanager(*self.conf)
        tms = [self.start_taskmanager(*self.conf, slots=slots) for _ in range(taskmanagers)]
        self.wait_overview(taskmanagers)
        return jm, tms

    def te_address(self, tm):
        m = tm.wait_log(r"TaskExecutor [0-9a-f]+ started at 127\.0\.0\.1:(\d+)/(\S+) with")
        return int(m.group(1)), m.group(2)

    def connect(self, port, host="127.0.0.1"):
        s = socket.create_connection((host, port), timeout=20)
        return s, read_exactly(s, HS)

    def replay(self, captured, port, magic, host="127.0.0.1"):
        """Sends bytes captured from a real connection on a new one, as an
        attacker would; returns what the server answered (read to its
        close) and this side's address, as the server logs it."""
        s, challenge = self.connect(port, host)
        self.assertEqual(struct.unpack(">I", challenge[:4])[0], magic)
        self.assertEqual(challenge[6], 0, "the challenge is a refusal")
        peer = "%s:%d" % s.getsockname()
        s.sendall(captured)
        reply = read_exactly(s, HS)
        self.assertNotEqual(reply[6], 0, "the replay was accepted")
        self.assertIn(b"replayed", reply[136:])
        self.assertEqual(read_to_eof(s), b"", "frames answered after the refusal")
        s.close()
        return reply, peer

    @staticmethod
    def captured(rec, what):
        """The bytes the first client sent through rec, once it sent more
        than its hello (the frames after it)."""
        def sent():
            with rec.lock:
                return bytes(rec.sent[0]) if rec.sent and len(rec.sent[0]) > HS else None
        return wait_for(sent, 60, f"a real {what} connection through the proxy")

    def behind_proxy(self):
        """A proxy on 127.0.0.1 to the same port of 127.0.0.2 (a loopback
        address too): a process bound to 127.0.0.2 that announces 127.0.0.1
        is reached through it."""
        rec = Recorder(target_host="127.0.0.2")
        self.addCleanup(rec.close)
        return rec

    def test_the_secret_file_is_made_private_and_shared(self):
        jm, tms = self.start_cluster()
        st = os.stat(self.secret_file)
        self.assertEqual(st.st_mode & 0o777, 0o600)
        self.assertGreaterEqual(len(self.secret()), 32)
        # spate config masks it; nothing prints the value.
        r = self.spate(*self.conf, "-D", f"security.rpc.secret={self.secret().decode()}",
                       "config")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("security.rpc.secret: ******", r.stdout)
        self.assertNotIn(self.secret().decode(), r.stdout)
        r = self.spate("-D", "security.rpc.secret=abc", "config", "security.rpc.secret")
        self.assertEqual(r.stdout.strip(), "******")
        # No process of the cluster has it on its command line.
        for p in [jm, *tms]:
            with open(f"/proc/{p.pid}/cmdline", "rb") as f:
                self.assertNotIn(self.secret(), f.read())

    def test_a_secret_file_others_can_read_is_refused(self):
        os.makedirs(os.path.dirname(self.secret_file))
        with open(self.secret_file, "w") as f:
            f.write("an old secret\n")
        os.chmod(self.secret_file, 0o644)
        r = self.spate(*self.conf, "taskmanager")
        self.assertEqual(r.returncode, 1)
        self.assertIn("may be read by others (mode 0644", r.stderr)
        self.assertIn("chmod 600", r.stderr)

    def test_a_replayed_handshake_is_refused(self):
        jm = self.start_jobmanager(*self.conf)
        rec = Recorder(self.rpc_port)
        self.addCleanup(rec.close)
        # A real TaskManager registers through the recording proxy.
        self.start_taskmanager(*self.conf, rpc_port=rec.port)
        self.wait_overview(1)
        with rec.lock:
            captured = bytes(rec.sent[0])
        self.assertGreater(len(captured), HS, "the TaskManager sent its hello and frames")
        self.assertNotIn(self.secret(), captured, "the secret went over the wire")
        # The attacker replays the hello and the registration that followed.
        _, peer = self.replay(captured, self.rpc_port, MAGIC_RPC)
        jm.wait_log(r"refused rpc connection from " + re.escape(peer) + r": peer's proof does "
                    r"not match security\.rpc\.secret \(a wrong secret, or a replayed handshake\)")
        self.assertTrue(jm.alive())
        self.assertEqual(self.overview()["taskmanagers"], 1)

    def test_a_replayed_data_handshake_is_refused_and_the_job_runs_on(self):
        """A TaskManager's data connection to another, captured by a proxy
        between them and replayed: refused, the job's records still flow."""
        jm = self.start_jobmanager(*self.conf)
        a = self.start_taskmanager(*self.conf, slots=1)
        # B binds to 127.0.0.2 and announces 127.0.0.1, where the proxies
        # are: A's data connection to B goes through `data`.
        data, rpc = self.behind_proxy(), self.behind_proxy()
        b = self.start_taskmanager(*self.conf, "-D", "taskmanager.bind-host=127.0.0.2",
                                   "-D", "taskmanager.host=127.0.0.1",
                                   "-D", f"taskmanager.data.port={data.port}",
                                   "-D", f"taskmanager.rpc.port={rpc.port}", slots=1)
        b.wait_log(r"data port 127\.0\.0\.2:%d" % data.port)
        self.wait_overview(2)
        # A keyed job over both: each source subtask sends to both counters.
        count, keys = 60_000, 20
        out = os.path.join(self.tmp, "out")
        r = self.spate(*self.conf, "-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run",
                       "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "2", TESTJOBS_PATH,
                       "checkpointed", "--count", str(count), "--rate", "3000", "--keys",
                       str(keys), "--output", out)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)
        captured = self.captured(data, "data")
        self.assertEqual(struct.unpack(">I", captured[:4])[0], MAGIC_DATA)
        self.assertNotIn(self.secret(), captured, "the secret went over the wire")
        # The replay, on B's data port itself: the hello and the partition
        # requests after it.
        _, peer = self.replay(captured, data.port, MAGIC_DATA, host="127.0.0.2")
        b.wait_log(r"dropping data connection from " + re.escape(peer) + r": peer's proof does "
                   r"not match security\.rpc\.secret \(a wrong secret, or a replayed handshake\)")
        self.assertEqual(self.job(jid)["state"], "RUNNING")
        # The job goes on over the real connections and ends with every
        # record counted once: nothing of the replay reached it.
        job = wait_for(lambda: (lambda j: j if j["state"] in TERMINAL else None)(self.job(jid)),
                       120, f"job {jid} ended")
        self.assertEqual(job["state"], "FINISHED", job)
        self.assert_counted_once(out, count, keys)
        self.assertTrue(jm.alive() and a.alive() and b.alive())
        self.assertEqual(self.overview()["taskmanagers"], 2)

    def test_a_replayed_blob_handshake_is_refused_and_blobs_still_download(self):
        """A TaskManager's fetch of a job's library from the BlobServer,
        captured by a proxy in front of it and replayed: refused, and the
        next TaskManager still downloads the library."""
        # The JobManager binds to 127.0.0.2 and announces 127.0.0.1, where
        # the proxies are: TaskManagers fetch blobs through `blob`.
        blob, rpc = self.behind_proxy(), self.behind_proxy()
        jm = self.start_jobmanager(*self.conf, "-D", "jobmanager.bind-host=127.0.0.2",
                                   "-D", "jobmanager.rpc.address=127.0.0.1",
                                   "-D", f"blob.server.port={blob.port}", rpc_port=rpc.port)
        jm.wait_log(r"BlobServer at 127\.0\.0\.1:%d " % blob.port)
        a = self.start_taskmanager(*self.conf, slots=1)
        self.wait_overview(1)
        jid = self.submit_job(1, "--run-ms", "100")
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 60, "the first job finished")
        a.wait_log(r"fetched blob [0-9a-f]+ from 127\.0\.0\.1:%d" % blob.port)
        captured = self.captured(blob, "blob")
        self.assertEqual(struct.unpack(">I", captured[:4])[0], MAGIC_BLOB)
        self.assertNotIn(self.secret(), captured, "the secret went over the wire")
        # The replay: the hello and the request for the library after it.
        _, peer = self.replay(captured, blob.port, MAGIC_BLOB, host="127.0.0.2")
        jm.wait_log(r"refused a blob connection from " + re.escape(peer) + r": peer's proof "
                    r"does not match security\.rpc\.secret \(a wrong secret, or a replayed "
                    r"handshake\)")
        # The BlobServer still serves: a new TaskManager (a BlobCache of its
        # own) downloads the library of a job over both.
        b = self.start_taskmanager(*self.conf, slots=1)
        self.wait_overview(2)
        jid = self.submit_job(2, "--run-ms", "100")
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 60, "the second job finished")
        b.wait_log(r"fetched blob [0-9a-f]+ from 127\.0\.0\.1:%d" % blob.port)
        self.assertTrue(jm.alive() and a.alive() and b.alive())

    def unauthenticated(self, port, method, target, payload, proc, secret=None):
        """Sends a hello without proof (or with a wrong secret's) and the
        control frame after it; the connection must be refused before it."""
        s, challenge = self.connect(port)
        kind = 2 if method == TE_STOP[0] else 1
        s.sendall(hello(challenge, secret=secret) + frame(kind, method, target, payload))
        reply = read_to_eof(s)
        s.close()
        self.assertGreaterEqual(len(reply), HS)
        self.assertNotEqual(reply[6], 0)
        self.assertEqual(len(reply), HS, "the frame was answered")
        proc.wait_log(r"refused rpc connection from 127\.0\.0\.1:\d+: peer")

    def test_control_frames_of_unauthenticated_peers_are_refused(self):
        jm, (tm,) = self.start_cluster()
        jid = self.submit_job(1, "--run-ms", "600000")
        wait_for(lambda: self.job(jid)["state"] == "RUNNING", 60, "the job running")
        te_port, te_name = self.te_address(tm)
        attacks = [(self.rpc_port, *DISPATCHER_SHUTDOWN, b"", jm),
                   (self.rpc_port, *DISPATCHER_CANCEL, job_id_payload(jid), jm),
                   (self.rpc_port, *RM_REGISTER, b"", jm),
                   (te_port, TE_STOP[0], te_name, b"", tm)]
        for port, method, target, payload, proc in attacks:
            before = proc.count(r"refused rpc connection from")
            self.unauthenticated(port, method, target, payload, proc)
            self.unauthenticated(port, method, target, payload, proc, secret=b"a guess")
            wait_for(lambda: proc.count(r"refused rpc connection from") >= before + 2, 10,
                     "both refusals logged")
        self.assertIn("peer presented no proof of the shared secret", jm.text())
        self.assertIn("peer's proof does not match security.rpc.secret", tm.text())
        # Nothing happened: both processes up, the job runs, the TaskManager
        # is still the only one.
        self.assertTrue(jm.alive() and tm.alive())
        self.assertEqual(self.job(jid)["state"], "RUNNING")
        self.assertEqual(self.overview()["taskmanagers"], 1)

    def test_a_peer_flooding_controls_is_rate_limited_in_the_access_log(self):
        """An authenticated peer sends 250 control calls at once: the access
        log keeps 100 lines a peer per 10 s and says how many it dropped."""
        jm, (tm,) = self.start_cluster()
        te_port, te_name = self.te_address(tm)
        s, challenge = self.connect(te_port)
        s.sendall(hello(challenge, secret=self.secret()))
        self.assertEqual(read_exactly(s, HS)[6], 0, "the secret's hello refused")
        peer = "%s:%d" % s.getsockname()
        flood = 250
        s.sendall(b"".join(frame(1, TE_CANCEL, te_name, b"", call_id=i + 1)
                           for i in range(flood)))
        for _ in range(flood):  # each ask answered: every call was served
            (n,) = struct.unpack(">I", read_exactly(s, 4))
            read_exactly(s, n)
        s.close()
        line = r"(?m)rpc: access: te\.cancel_task from " + re.escape(peer) + "$"
        # Closing its last connection says what the peer's limiter dropped.
        m = tm.wait_log(r"access: (\d+) lines of controls from 127\.0\.0\.1 were not logged "
                        r"\(at most 100 per 10 s from one peer\)")
        logged = tm.count(line)
        rolled = sum(int(n) for n in re.findall(r"\((\d+) lines like the next were not logged",
                                                tm.text()))
        self.assertLess(logged, flood, "no line dropped")
        self.assertEqual(logged + int(m.group(1)) + rolled, flood, "every call accounted for")
        self.assertTrue(tm.alive() and jm.alive())
        self.assertEqual(self.overview()["taskmanagers"], 1)

    def test_cluster_controls_are_served_to_their_own_process_only(self):
        jm, (tm,) = self.start_cluster()
        jid = self.submit_job(1, "--run-ms", "600000")
        wait_for(lambda: self.job(jid)["state"] == "RUNNING", 60, "the job running")
        # Even a peer that knows the secret (a TaskManager) cannot stop the
        # cluster or cancel a job over RPC: that is the REST API's.
        for method, payload in [(DISPATCHER_SHUTDOWN[0], b""),
                                (DISPATCHER_CANCEL[0], job_id_payload(jid))]:
            s, challenge = self.connect(self.rpc_port)
            s.sendall(hello(challenge, secret=self.secret()) +
                      frame(1, method, "dispatcher", payload))
            reply = read_exactly(s, HS)
            self.assertEqual(reply[6], 0, reply[136:])
            head = read_exactly(s, 33)
            self.assertEqual(head[5], 4, "an error frame")
            s.close()
        jm.wait_log(r"refused dispatcher\.shutdown_cluster from 127\.0\.0\.1:\d+: only the "
                    r"process of 'dispatcher' may call it")
        jm.wait_log(r"refused dispatcher\.cancel_job from")
        self.assertTrue(jm.alive() and tm.alive())
        self.assertEqual(self.job(jid)["state"], "RUNNING")

    def test_data_and_blob_ports_refuse_an_unauthenticated_peer(self):
        jm, (tm,) = self.start_cluster()
        data_port = int(tm.wait_log(r"data port [\d.]+:(\d+)").group(1))
        s, challenge = self.connect(data_port)
        self.assertEqual(struct.unpack(">I", challenge[:4])[0], MAGIC_DATA)
        s.sendall(hello(challenge, magic=MAGIC_DATA, cluster=b"/default"))
        reply = read_to_eof(s)
        s.close()
        self.assertNotEqual(reply[6], 0)
        tm.wait_log(r"dropping data connection from 127\.0\.0\.1:\d+: peer presented no proof")
        # The BlobServer: same handshake, same refusal.
        blob_port = int(jm.wait_log(r"BlobServer at 127\.0\.0\.1:(\d+)").group(1))
        s, challenge = self.connect(blob_port)
        self.assertEqual(struct.unpack(">I", challenge[:4])[0], MAGIC_BLOB)
        s.sendall(hello(challenge, magic=MAGIC_BLOB, cluster=b"/default", secret=b"wrong")
                  + b"\x01" + bytes(32))
        reply = read_to_eof(s)
        s.close()
        self.assertNotEqual(reply[6], 0)
        jm.wait_log(r"refused a blob connection from 127\.0\.0\.1:\d+: peer's proof does not")
        # The cluster still runs jobs (their libraries come from the BlobServer).
        jid = self.submit_job(1, "--run-ms", "100")
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 60, "the job finished")


class RestSecurityTest(ClusterTestCase):
    """REST: uploads off by default, authentication of requests that change
    something, the CLI sending its credentials."""

    def private_file(self, name, text):
        path = os.path.join(self.tmp, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        return path

    def http(self, path, method="GET", body=None, auth=None, ctype="application/json"):
        """(status, JSON body, headers)."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.rest_port}{path}", data=body,
                                     method=method)
        if body is not None:
            req.add_header("Content-Type", ctype)
        if auth is not None:
            req.add_header("Authorization", auth)
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read() or b"{}"), r.headers
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"{}"), e.headers

    def test_uploads_are_off_by_default(self):
        jm = self.start_jobmanager()
        body = (b"--b\r\nContent-Disposition: form-data; name=\"jarfile\"; filename=\"x.so\"\r\n"
                b"Content-Type: application/octet-stream\r\n\r\nELF\r\n--b--\r\n")
        status, answer, _ = self.http("/jars/upload", "POST", body,
                                      ctype="multipart/form-data; boundary=b")
        self.assertEqual(status, 404)
        self.assertIn("web.submit.enable is false", answer["errors"][0])
        status, answer, _ = self.http("/jars")
        self.assertEqual(status, 404)
        # A clear line names who tried; nothing was stored or accepted, and
        # the JobManager serves on.
        jm.wait_log(r"refused POST /jars/upload from 127\.0\.0\.1:\d+: job submission over "
                    r"REST is off \(web\.submit\.enable is false\)")
        self.assertNotIn("access: POST /jars/upload", jm.text())
        self.assertTrue(jm.alive())
        self.assertEqual(self.http("/overview")[0], 200)

    def test_bearer_tokens_guard_every_change(self):
        tokens = self.private_file("tokens", "# operators\nfirst-token\nsecond-token\n")
        auth = ["-D", f"rest.authentication.token-file={tokens}"]
        jm = self.start_jobmanager(*auth)
        self.start_taskmanager()
        self.wait_overview(1)
        # Reading needs nothing.
        self.assertEqual(self.http("/overview")[0], 200)
        # The CLI sends the first token from the same configuration.
        jid = self.submit_job(1, "--run-ms", "600000", conf=auth)
        wait_for(lambda: self.job(jid)["state"] == "RUNNING", 60, "the job running")
        r = self.spate(*auth, "list", "-m", f"127.0.0.1:{self.rest_port}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(jid, r.stdout)
        # A client without the token, or with a wrong one, is refused: 401
        # in Flink's error body, and a log line naming it.
        for header in [None, "Bearer wrong-token", "Basic Zmlyc3QtdG9rZW46eA==", "Token x"]:
            status, answer, headers = self.http(f"/jobs/{jid}?mode=cancel", "PATCH",
                                                auth=header)
            self.assertEqual(status, 401, header)
            self.assertIn("Unauthorized", answer["errors"][0])
            self.assertIn("Bearer", headers["WWW-Authenticate"])
        jm.wait_log(r"refused PATCH /jobs/[0-9a-f]+ from 127\.0\.0\.1:\d+: no credentials")
        jm.wait_log(r"refused PATCH /jobs/[0-9a-f]+ from 127\.0\.0\.1:\d+: unknown bearer token")
        r = self.spate("cancel", "-m", f"127.0.0.1:{self.rest_port}", jid)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Unauthorized", r.stderr)
        self.assertEqual(self.job(jid)["state"], "RUNNING")
        # The second token works as well as the first.
        status, _, _ = self.http(f"/jobs/{jid}?mode=cancel", "PATCH", auth="Bearer second-token")
        self.assertEqual(status, 202)
        wait_for(lambda: self.job(jid)["state"] == "CANCELED", 60, "the job canceled")
        # The access log names who changed what: REST's client, then the
        # RPC control it led to; refused requests reached neither.
        jm.wait_log(r"access: PATCH /jobs/" + jid + r" from 127\.0\.0\.1:\d+ \(authenticated\)")
        jm.wait_log(r"rpc: access: dispatcher\.cancel_job from ")
        self.assertEqual(jm.count(r"access: PATCH /jobs/"), 1)

    def test_basic_credentials_and_the_cli(self):
        creds = self.private_file("users", "alice:s3cr3t pass\n")
        auth = ["-D", f"rest.authentication.credentials-file={creds}"]
        jm = self.start_jobmanager(*auth)
        self.start_taskmanager()
        self.wait_overview(1)
        r = self.spate("run", "-m", f"127.0.0.1:{self.rest_port}", "-d", TESTJOBS_PATH, "slots",
                       "--slots", "1", "--run-ms", "100")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("Unauthorized", r.stderr)
        jid = self.submit_job(1, "--run-ms", "100", conf=auth)
        wait_for(lambda: self.job(jid)["state"] == "FINISHED", 60, "the job finished")
        wrong = "Basic " + base64.b64encode(b"alice:guess").decode()
        status, _, headers = self.http("/cluster", "DELETE", auth=wrong)
        self.assertEqual(status, 401)
        self.assertIn("Basic", headers["WWW-Authenticate"])
        jm.wait_log(r"refused DELETE /cluster from 127\.0\.0\.1:\d+: unknown user or wrong "
                    r"password")
        self.assertTrue(jm.alive())
        right = "Basic " + base64.b64encode(b"alice:s3cr3t pass").decode()
        self.assertEqual(self.http("/cluster", "DELETE", auth=right)[0], 200)
        jm.popen.wait(timeout=30)

    def test_a_token_file_others_can_read_is_refused(self):
        tokens = self.private_file("tokens", "t\n")
        os.chmod(tokens, 0o644)
        r = self.spate("-D", f"rest.authentication.token-file={tokens}", "-D",
                       "jobmanager.rpc.port=0", "-D", "rest.port=0", "jobmanager", timeout=30)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("rest.authentication.token-file", r.stderr)
        self.assertIn("chmod 600", r.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
