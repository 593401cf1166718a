"""TLS on every connection (issue 29, docs/security.md): certificates from
scripts/make-test-certs.sh, a JobManager and TaskManagers on 127.0.0.1 with
security.ssl.internal.* (RPC, data, blob) and security.ssl.rest.* (HTTPS).

- a job over three TaskManagers (one slot each, so its records cross the
  data plane), a checkpoint, a TaskManager killed -9 and replaced, the job
  restored and finished exactly once; `spate list` and the REST API over
  HTTPS; plain HTTP on the REST port gets no answer;
- refusals, each with a log line saying why, the JobManager unaffected: a
  plaintext client on the TLS RPC, blob and data ports, a certificate of
  another CA, an expired certificate, and a TaskManager with another CA's
  certificate; a plaintext client on the HTTPS REST port, named in the log,
  REST and the CLI served over HTTPS after it;
- configuration errors refused at start, naming the key and the file: a
  missing file, a file without PEM, a key that does not match, an expired
  certificate;
- SIGHUP: certificates read again before the next connection, internal
  ones and REST's; a bad file keeps the old ones."""

import os
import re
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(__file__))
from clustertest import TESTJOBS, ClusterTestCase, job_id_of, wait_for  # noqa: E402
from spatetest import BUILD  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAKE_CERTS = os.path.join(ROOT, "scripts", "make-test-certs.sh")
ASAN = "asan" in BUILD
TERMINAL = ("FINISHED", "FAILED", "CANCELED")


class TlsTest(ClusterTestCase):

    def setUp(self):
        super().setUp()
        self.certs = os.path.join(self.tmp, "certs")
        subprocess.run(["sh", MAKE_CERTS, self.certs], check=True, capture_output=True)
        self.ssl_context = ssl.create_default_context(cafile=self.cert("ca.pem"))

    def cert(self, name):
        return os.path.join(self.certs, name)

    def tls_conf(self, node="node", internal=True, rest=True):
        c = []
        if internal:
            c += ["-D", "security.ssl.internal.enabled=true",
                  "-D", f"security.ssl.internal.cert={self.cert(node + '.pem')}",
                  "-D", f"security.ssl.internal.key={self.cert(node + '.key')}",
                  "-D", f"security.ssl.internal.truststore={self.cert('ca.pem')}"]
        if rest:
            c += ["-D", "security.ssl.rest.enabled=true",
                  "-D", f"security.ssl.rest.cert={self.cert('node.pem')}",
                  "-D", f"security.ssl.rest.key={self.cert('node.key')}",
                  "-D", f"security.ssl.rest.truststore={self.cert('ca.pem')}"]
        return c

    def client_context(self, node):
        """A TLS client presenting node's certificate, trusting the test CA."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.load_verify_locations(self.cert("ca.pem"))
        ctx.load_cert_chain(self.cert(node + ".pem"), self.cert(node + ".key"))
        return ctx

    def tls_exchange(self, port, node):
        """Connects with node's certificate and reads what the server says
        first (spate's challenge): its bytes, or the error that ended it."""
        raw = socket.create_connection(("127.0.0.1", port), timeout=10)
        try:
            with self.client_context(node).wrap_socket(raw) as s:
                got = b""
                while len(got) < 256:
                    chunk = s.recv(256 - len(got))
                    if not chunk:
                        break
                    got += chunk
                return got
        except (ssl.SSLError, OSError) as e:
            return e
        finally:
            raw.close()

    # ---- end to end ----------------------------------------------------------------------

    def test_job_checkpoint_kill9_and_recovery_with_tls_everywhere(self):
        conf = self.tls_conf()
        jm = self.start_jobmanager(*conf)
        self.assertEqual(self.rest_scheme, "https")
        self.assertIn("(TLS)", jm.text())
        tms = [self.start_taskmanager(*conf, slots=1) for _ in range(3)]
        self.wait_overview(3, slots=3)

        count, rate = (200_000, 40_000) if ASAN else (1_500_000, 150_000)
        keys = 30
        out = os.path.join(self.tmp, "out")
        r = self.spate(*conf, "-D", f"state.checkpoints.dir={self.tmp}/checkpoints", "run",
                       "-m", f"127.0.0.1:{self.rest_port}", "-d", "-p", "3", TESTJOBS,
                       "checkpointed", "--count", str(count), "--rate", str(rate),
                       "--keys", str(keys), "--output", out, timeout=120)
        self.assertEqual(r.returncode, 0, r.stderr)
        jid = job_id_of(r.stdout)

        # `spate list` over HTTPS sees it; REST answers over HTTPS.
        r = self.spate(*conf, "list", "-m", f"127.0.0.1:{self.rest_port}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn(jid, r.stdout)
        status, jobs = self.rest("/jobs/overview")
        self.assertEqual(status, 200)
        self.assertIn(jid, [j["jid"] for j in jobs["jobs"]])

        self.wait_checkpoint_while_running(jid)
        restored = self.rest(f"/jobs/{jid}/checkpoints")[1]["counts"]["restored"]
        tms[0].kill()
        tms.append(self.start_taskmanager(*conf, slots=1))

        def restored_again():
            s = self.rest(f"/jobs/{jid}/checkpoints")[1]
            return s if s["counts"]["restored"] > restored else None
        wait_for(restored_again, 90, f"the restore of {jid} after the kill -9")
        job = self.wait_state(jid, TERMINAL, timeout=180)
        self.assertEqual(job["state"], "FINISHED", job.get("failure"))

        # Exactly once through the kill: every key's counts 1..n, once each.
        self.assert_counted_once(out, count, keys)

        # Plain HTTP on the HTTPS port gets no HTTP answer.
        with socket.create_connection(("127.0.0.1", self.rest_port), timeout=10) as s:
            s.sendall(b"GET /overview HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            try:
                answer = s.recv(4096)
            except OSError:
                answer = b""
            self.assertNotIn(b"HTTP/1.1 200", answer)
        # Nor does a CLI without the truststore.
        r = self.spate("-D", "security.ssl.rest.enabled=true", "-D",
                       f"security.ssl.rest.truststore={self.cert('other-ca.pem')}", "list",
                       "-m", f"127.0.0.1:{self.rest_port}")
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("certificate", r.stderr)

    # ---- refusals ------------------------------------------------------------------------

    def test_refusals_plaintext_other_ca_and_expired_leave_the_cluster_unaffected(self):
        conf = self.tls_conf(rest=False)
        jm = self.start_jobmanager(*conf)
        tm = self.start_taskmanager(*conf, slots=1)
        self.wait_overview(1, slots=1)

        # A good client reads spate's challenge inside TLS.
        got = self.tls_exchange(self.rpc_port, "node")
        self.assertEqual(got[:4], b"SPRC", got)

        # A plaintext client: refused at once, saying why.
        with socket.create_connection(("127.0.0.1", self.rpc_port), timeout=10) as s:
            s.sendall(b"SPRC" + bytes(252))
            try:
                s.recv(4096)
            except OSError:
                pass
        jm.wait_log(r"refused rpc connection from 127\.0\.0\.1:\d+: TLS handshake failed: .*"
                    r"the peer does not speak TLS")
        # The same on the BlobServer's and a TaskManager's data port.
        blob_port = int(jm.wait_log(r"BlobServer at [\d.]+:(\d+)").group(1))
        data_port = int(tm.wait_log(r"data port [\d.]+:(\d+)").group(1))
        for port in (blob_port, data_port):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                s.sendall(b"SPDT" + bytes(252))
                try:
                    s.recv(4096)
                except OSError:
                    pass
        jm.wait_log(r"refused a blob connection from 127\.0\.0\.1:\d+: TLS handshake failed: "
                    r".*the peer does not speak TLS")
        tm.wait_log(r"refused data connection from 127\.0\.0\.1:\d+: TLS handshake failed: "
                    r".*the peer does not speak TLS")

        # Another CA's certificate, an expired one.
        self.assertIsInstance(self.tls_exchange(self.rpc_port, "other"), (Exception, bytes))
        jm.wait_log(r"refused rpc connection from 127\.0\.0\.1:\d+: TLS handshake failed: the "
                    r"peer's certificate is refused: unable to get local issuer certificate")
        self.tls_exchange(self.rpc_port, "expired")
        jm.wait_log(r"refused rpc connection from 127\.0\.0\.1:\d+: TLS handshake failed: the "
                    r"peer's certificate is refused: certificate has expired")

        # A TaskManager with another CA's certificate does not get in.
        bad = self.start_taskmanager(*self.tls_conf(node="other", rest=False), slots=1)
        bad.wait_log(r"closing rpc connection to 127\.0\.0\.1:\d+: TLS .* failed: tlsv1 alert "
                     r"unknown ca \(the peer refused this side's certificate\)")
        jm.wait_log(r"refused rpc connection from 127\.0\.0\.1:\d+: TLS handshake failed: the "
                    r"peer's certificate is refused: unable to get local issuer certificate")
        # The JobManager is unaffected: alive, the good TaskManager still
        # registered, and a good client still served.
        self.assertTrue(jm.alive())
        self.assertEqual(self.overview()["taskmanagers"], 1)
        self.assertEqual(self.tls_exchange(self.rpc_port, "node")[:4], b"SPRC")

    def test_a_plaintext_client_on_the_https_port_is_refused_and_https_serves_on(self):
        jm = self.start_jobmanager(*self.tls_conf(internal=False))
        self.assertEqual(self.rest_scheme, "https")
        self.assertEqual(self.rest("/overview")[0], 200)
        # A client that speaks plain HTTP to the HTTPS port (an http:// URL)
        # gets no HTTP answer, and the log names it and says why.
        with socket.create_connection(("127.0.0.1", self.rest_port), timeout=10) as s:
            peer = "%s:%d" % s.getsockname()
            s.sendall(b"GET /overview HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer = b""
            try:
                while chunk := s.recv(4096):
                    answer += chunk
            except OSError:
                pass
        self.assertNotIn(b"HTTP/1.1", answer)
        jm.wait_log(r"refused REST connection from " + re.escape(peer) + r": TLS handshake "
                    r"failed: the client does not speak TLS \(it sent no TLS hello: plain HTTP "
                    r"on the HTTPS port, security\.ssl\.rest\.enabled is true; use https://\)")
        # The JobManager serves on over HTTPS: REST and the CLI.
        self.assertTrue(jm.alive())
        status, body = self.rest("/overview")
        self.assertEqual(status, 200, body)
        r = self.spate(*self.tls_conf(internal=False), "list", "-m",
                       f"127.0.0.1:{self.rest_port}")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(jm.count(r"refused REST connection from"), 1)

    # ---- configuration --------------------------------------------------------------------

    def start_refused(self, *conf):
        r = self.spate(*conf, "-D", "jobmanager.rpc.port=0", "-D", "rest.port=0", "jobmanager",
                       timeout=30)
        self.assertNotEqual(r.returncode, 0)
        return r.stderr

    def test_configuration_errors_are_refused_at_start_naming_key_and_file(self):
        garbage = os.path.join(self.tmp, "garbage.pem")
        with open(garbage, "w") as f:
            f.write("not a certificate\n")
        base = self.tls_conf(rest=False)

        err = self.start_refused(*base, "-D", "security.ssl.internal.cert=/nonexistent/node.pem")
        self.assertIn("security.ssl.internal.cert: cannot read '/nonexistent/node.pem'", err)
        err = self.start_refused(*base, "-D", f"security.ssl.internal.cert={garbage}")
        self.assertIn(f"security.ssl.internal.cert: '{garbage}' holds no PEM certificate", err)
        err = self.start_refused(*base, "-D",
                                 f"security.ssl.internal.key={self.cert('other.key')}")
        self.assertIn(f"security.ssl.internal.key: the key in '{self.cert('other.key')}' does "
                      f"not match the certificate in '{self.cert('node.pem')}'", err)
        err = self.start_refused(*self.tls_conf(node="expired", rest=False))
        self.assertIn(f"security.ssl.internal.cert: the certificate in "
                      f"'{self.cert('expired.pem')}' is expired since", err)
        err = self.start_refused(*base, "-D", f"security.ssl.internal.truststore={garbage}")
        self.assertIn(f"security.ssl.internal.truststore: '{garbage}' holds no PEM CA "
                      "certificate", err)
        err = self.start_refused(*self.tls_conf(internal=False), "-D",
                                 "security.ssl.rest.key=/nonexistent/rest.key")
        self.assertIn("security.ssl.rest.key: cannot read '/nonexistent/rest.key'", err)

    def test_sighup_reloads_certificates_and_keeps_them_when_a_file_is_bad(self):
        own = os.path.join(self.tmp, "own")
        shutil.copytree(self.certs, own)
        conf = ["-D", "security.ssl.internal.enabled=true",
                "-D", f"security.ssl.internal.cert={own}/node.pem",
                "-D", f"security.ssl.internal.key={own}/node.key",
                "-D", f"security.ssl.internal.truststore={own}/ca.pem"]
        jm = self.start_jobmanager(*conf)
        jm.signal(signal.SIGHUP)
        jm.wait_log(r"SIGHUP: certificates are read again")
        self.assertEqual(self.tls_exchange(self.rpc_port, "node")[:4], b"SPRC")
        jm.wait_log(r"certificates reloaded from '" + re.escape(own) + "/node.pem'")

        with open(os.path.join(own, "node.pem"), "w") as f:
            f.write("broken\n")
        jm.signal(signal.SIGHUP)
        wait_for(lambda: jm.count(r"SIGHUP: certificates are read again") == 2, 30, "SIGHUP 2")
        self.assertEqual(self.tls_exchange(self.rpc_port, "node")[:4], b"SPRC")
        jm.wait_log(r"certificates not reloaded, the old ones stay: security.ssl.internal.cert: "
                    r"'" + re.escape(own) + r"/node.pem' holds no PEM certificate")
        self.assertTrue(jm.alive())

    def rest_served_cert(self):
        """The DER certificate the REST port serves a new connection."""
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE
        with socket.create_connection(("127.0.0.1", self.rest_port), timeout=10) as raw:
            with ctx.wrap_socket(raw) as s:
                return s.getpeercert(binary_form=True)

    def test_sighup_reloads_the_rest_certificate_and_keeps_it_when_a_file_is_bad(self):
        own = os.path.join(self.tmp, "own")
        shutil.copytree(self.certs, own)
        jm = self.start_jobmanager("-D", "security.ssl.rest.enabled=true",
                                   "-D", f"security.ssl.rest.cert={own}/node.pem",
                                   "-D", f"security.ssl.rest.key={own}/node.key",
                                   "-D", f"security.ssl.rest.truststore={own}/ca.pem")
        der = {}
        for n in ("node", "other"):
            with open(self.cert(n + ".pem")) as f:
                der[n] = ssl.PEM_cert_to_DER_cert(f.read())
        self.assertEqual(self.rest_served_cert(), der["node"])
        # Another certificate in the same files: served after SIGHUP, and
        # REST answers over it.
        shutil.copy(self.cert("other.pem"), os.path.join(own, "node.pem"))
        shutil.copy(self.cert("other.key"), os.path.join(own, "node.key"))
        self.assertEqual(self.rest_served_cert(), der["node"], "read again without SIGHUP")
        jm.signal(signal.SIGHUP)
        jm.wait_log(r"SIGHUP: certificates are read again")
        self.assertEqual(self.rest_served_cert(), der["other"])
        jm.wait_log(r"REST certificates reloaded from '" + re.escape(own) + "/node.pem'")
        self.ssl_context = ssl.create_default_context(cafile=self.cert("other-ca.pem"))
        self.ssl_context.check_hostname = False
        status, _ = self.rest("/config")
        self.assertEqual(status, 200)
        # A broken file: the last good certificate stays.
        with open(os.path.join(own, "node.pem"), "w") as f:
            f.write("broken\n")
        jm.signal(signal.SIGHUP)
        wait_for(lambda: jm.count(r"SIGHUP: certificates are read again") == 2, 30, "SIGHUP 2")
        self.assertEqual(self.rest_served_cert(), der["other"])
        jm.wait_log(r"REST certificates not reloaded, the old ones stay: security.ssl.rest.cert: "
                    r"'" + re.escape(own) + r"/node.pem' holds no PEM certificate")
        self.assertTrue(jm.alive())


if __name__ == "__main__":
    unittest.main()
