"""The nexmark connector and the Nexmark queries (issue 26). The events
spate's connector generates are compared row by row with those of
nexmark_ref.py, a port to Python of the Nexmark repository's Java generator
computed outside spate, for a few configurations (the default, others with
every option changed, parallelism 2); then the queries of bench/nexmark/
(q0, q1, q2, q3, q7, q8, q11, q12, q13, q14, q15, q16, q17, q20, q21, q22;
q10 read back from its partition folders;
q4, q5, q9, q18 and q19 as changelogs, applied) run in spate SQL over those
events and their
results are compared with the same queries computed in Python over the
reference's events (q12, on processing time, by what does not depend on the
clock: each bidder's total over the windows); then the connector's
errors."""

import datetime
import os
import re
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(__file__))
import nexmark_ref as ref  # noqa: E402
import spatetest  # noqa: E402
from sqloracle import apply_changelog, parse_csv_line  # noqa: E402

QUERIES = os.path.join(spatetest.SOURCE, "bench", "nexmark")
UDF = os.path.join(spatetest.BUILD, "examples", "nexmark_udf.so")

TYPES = {"id": "BIGINT", "initialBid": "BIGINT", "reserve": "BIGINT", "seller": "BIGINT",
         "category": "BIGINT", "auction": "BIGINT", "bidder": "BIGINT", "price": "BIGINT",
         "dateTime": "TIMESTAMP(3)", "expires": "TIMESTAMP(3)"}


def ts_text(ms):
    t = datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def text(col, v):
    """A reference value as spate's CSV sink writes it."""
    if v is None:
        return None
    return ts_text(v) if col in ("dateTime", "expires") else str(v)


def options(conf):
    """The connector's WITH options for a reference configuration."""
    return (f"connector = 'nexmark', \"events.num\" = '{conf.events}', "
            f"\"first-event.rate\" = '{round(1000000.0 / conf.delay_us)}', "
            f"\"person.proportion\" = '{conf.person}', "
            f"\"auction.proportion\" = '{conf.auction}', \"bid.proportion\" = '{conf.bid}', "
            f"\"person.avg-size\" = '{conf.person_size}b', "
            f"\"auction.avg-size\" = '{conf.auction_size}b', "
            f"\"bid.avg-size\" = '{conf.bid_size}b', "
            f"\"bid.hot-ratio.auctions\" = '{conf.hot_auctions}', "
            f"\"bid.hot-ratio.bidders\" = '{conf.hot_bidders}', "
            f"\"auction.hot-ratio.sellers\" = '{conf.hot_sellers}', "
            f"\"base-time\" = '{conf.base_time}'")


def q11_reference(bids, gap):
    """Sessions per bidder (bids in time order): one goes on while the next
    bid comes less than gap after the last; (bidder, count, start, last +
    gap)."""
    open_, done = {}, []
    for b in bids:
        s = open_.get(b["bidder"])
        if s is not None and b["dateTime"] < s[2] + gap:
            s[2] = b["dateTime"]
            s[3] += 1
            continue
        if s is not None:
            done.append(s)
        open_[b["bidder"]] = [b["bidder"], b["dateTime"], b["dateTime"], 1]
    done += open_.values()
    return [(bidder, n, ts_text(start), ts_text(last + gap)) for bidder, start, last, n in done]


class NexmarkTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="spate-nexmark-")
        self.runs = 0

    def tearDown(self):
        subprocess.run(["rm", "-rf", self.tmp], check=False)

    def sql(self, script, parallelism=1, ok=True):
        p = subprocess.run([spatetest.SPATE, "sql", "--local", "-p", str(parallelism)],
                           input=script, capture_output=True, text=True, timeout=120)
        if ok and p.returncode != 0:
            raise AssertionError(f"spate sql failed:\n{p.stderr}\n{p.stdout}\n{script}")
        return p

    def out_path(self):
        self.runs += 1
        return os.path.join(self.tmp, f"out{self.runs}")

    @staticmethod
    def rows(path):
        rows = []
        for name in sorted(os.listdir(path)) if os.path.isdir(path) else []:
            if not name.startswith("."):
                with open(os.path.join(path, name)) as f:
                    rows += [parse_csv_line(line.rstrip("\n")) for line in f]
        return rows

    def generated(self, conf, parallelism=1):
        """spate's rows of each table (person, auction, bid) under conf."""
        script, outs = [], {}
        for kind, cols in ref.COLUMNS.items():
            decl = ", ".join(f"{c} {TYPES.get(c, 'VARCHAR')}" for c in cols)
            outs[kind] = self.out_path()
            script.append(f"CREATE TABLE {kind} ({decl}) WITH ({options(conf)});")
            script.append(f"CREATE TABLE out_{kind} WITH (connector = 'filesystem', "
                          f"path = '{outs[kind]}', format = 'csv') AS SELECT * FROM {kind};")
        self.sql("\n".join(script), parallelism)
        return {kind: self.rows(path) for kind, path in outs.items()}

    def reference(self, conf):
        want = {kind: [] for kind in ref.COLUMNS}
        for kind, fields in ref.events(conf):
            want[kind].append([text(c, fields[c]) for c in ref.COLUMNS[kind]])
        return want

    def assert_same_events(self, conf, parallelism=1):
        got, want = self.generated(conf, parallelism), self.reference(conf)
        for kind in ref.COLUMNS:
            g, w = got[kind], want[kind]
            if parallelism > 1:  # the subtasks' files: the same rows, in another order
                g, w = sorted(g, key=repr), sorted(w, key=repr)
            self.assertEqual(len(g), len(w), f"{kind}: {len(g)} rows, the reference {len(w)}")
            for i, (a, b) in enumerate(zip(g, w)):
                self.assertEqual(a, b, f"{kind} row {i} differs from the reference")
            self.assertGreater(len(w), 0, kind)

    def test_default_configuration(self):
        """The connector's defaults (Flink's: 1/3/46, sizes 200/500/100,
        hot ratios 2/4/4, 10,000 events a second): 3,000 events."""
        self.assert_same_events(ref.Config(events=3000, base_time=0))

    def test_every_option_changed(self):
        """Other proportions, sizes (a bid's extra empty: its 32 bytes are
        over the average), hot ratios, a rate of 1 M events a second
        (several events in a millisecond) and a base time."""
        self.assert_same_events(ref.Config(events=2500, rate=1000000, person=2, auction=5,
                                           bid=13, person_size=300, auction_size=1024,
                                           bid_size=20, hot_auctions=3, hot_bidders=5,
                                           hot_sellers=7, base_time=1700000000123))

    def test_parallelism_two(self):
        """Two subtasks generate the same events between them."""
        self.assert_same_events(ref.Config(events=4000, rate=20000, base_time=86400000), 2)

    def test_reference_primitives_are_javas(self):
        """nexmark_ref.py's port of java.util.Random, Math.pow and
        Math.round as the generator uses them, Integer.reverse, Java's
        remainder and division and String.trim, against the real JDK's
        (JavaRandomProbe.java, run by java): the reference is Java's."""
        import shutil
        import struct
        java = shutil.which("java")
        self.assertIsNotNone(java, "java (the JDK the Kafka and ZooKeeper tests run on)")
        probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "JavaRandomProbe.java")
        p = subprocess.run([java, probe, "400"], capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        bounds = [2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 26, 46, 100, 1010, 10000, 2147483647]
        lines = p.stdout.splitlines()
        self.assertEqual(len(lines), 403)
        for seed, line in zip(range(-3, 400), lines):
            s = seed * 7919 + (123456789012 if ref.jmod(seed, 5) == 0 else 0)
            r = ref.JavaRandom(s)
            got = [str(s)] + [str(r.next_int(b)) for b in bounds]
            got += [str(r.next_int()), str(r.next_long())]
            d = r.next_double()
            got.append(str(struct.unpack("<q", struct.pack("<d", d))[0]))
            got.append(str(ref.java_round(ref.math.pow(10.0, d * 6.0) * 100.0)))
            got.append(str(ref.java_round((seed & 1023) * 0.2)))
            ch = abs(seed) % 10000
            rev = ref.integer_reverse(ch)
            got.append(str(rev if rev == -2**31 else abs(rev)))
            got += [str(ref.jmod(ch, 26)), str(ref.jmod(-ch, 26)), str(ref.jdiv(-ch, 26))]
            got.append("[" + "  a b "[abs(seed) % 3:].strip(" ") + "]")
            self.assertEqual(" ".join(got), line, f"seed {s}")

    # ---- the queries ----

    @staticmethod
    def ddl(conf, fast=False):
        """bench/nexmark/ddl.sql with conf (fast: the source not paced, its
        events' times conf's)."""
        with open(os.path.join(QUERIES, "ddl.sql")) as f:
            ddl = f.read()
        for k, v in {"TPS": round(1000000.0 / conf.delay_us), "EVENTS_NUM": conf.events,
                     "PERSON_PROPORTION": conf.person, "AUCTION_PROPORTION": conf.auction,
                     "BID_PROPORTION": conf.bid, "BASE_TIME": conf.base_time}.items():
            ddl = ddl.replace("${" + k + "}", str(v))
        if fast:
            ddl = ddl.replace("\"base-time\" =", "\"max-emit-speed\" = 'true', \"base-time\" =")
        return ddl

    def script(self, name, conf, sink, fast=False, output=None):
        """ddl(conf, fast), then bench/nexmark/<name>.sql with its blackhole
        sink replaced by sink (None: its own, writing under output)."""
        ddl = self.ddl(conf, fast)
        with open(os.path.join(QUERIES, f"{name}.sql")) as f:
            q = f.read().replace("${NEXMARK_UDF}", UDF)
        if "${SIDE_INPUT}" in q:
            q = q.replace("${SIDE_INPUT}", self.side_input())
        if sink is None:
            return ddl + "\n" + q.replace("${OUTPUT_DIR}", output)
        q, n = re.subn(r"connector = 'blackhole'", sink, q)
        self.assertEqual(n, 1, f"{name}.sql has one blackhole sink")
        return ddl + "\n" + q

    def query(self, name, conf, parallelism=1, fast=False):
        """bench/nexmark/<name>.sql over bench/nexmark/ddl.sql with conf, its
        sink a CSV folder: the rows."""
        out = self.out_path()
        self.sql(self.script(name, conf, f"connector = 'filesystem', path = '{out}', "
                             "format = 'csv'", fast), parallelism)
        return sorted(self.rows(out), key=repr)

    def changelog(self, name, conf, parallelism=1, fast=False):
        """bench/nexmark/<name>.sql, an updating query, into a print sink:
        the rows its changelog leaves once applied in order."""
        p = self.sql(self.script(name, conf, "connector = 'print'", fast), parallelism)
        rows = []
        for line in p.stdout.splitlines():
            m = re.match(r"^(?:\d+> )?([+-][IUD])\[(.*)\]$", line)
            if not m:
                continue
            row = [None if v == "null" else v for v in m.group(2).split(", ")]
            if m.group(1) in ("+I", "+U"):
                rows.append(row)
            else:
                self.assertIn(row, rows, f"{name}: {line} retracts a row that is not there")
                rows.remove(row)
        return sorted(rows, key=repr)

    _bids = {}

    def bids(self, conf):
        if id(conf) not in self._bids:
            self._bids[id(conf)] = [f for kind, f in ref.events(conf) if kind == "bid"]
        return self._bids[id(conf)]

    def check_query(self, name, conf, want, parallelism=1, fast=False, updating=False):
        got = (self.changelog if updating else self.query)(name, conf, parallelism, fast)
        want = sorted(([None if v is None else str(v) for v in row] for row in want),
                      key=repr)
        self.assertGreater(len(want), 0, f"{name}: the reference has rows")
        self.assertEqual(len(got), len(want), f"{name}: {len(got)} rows, the reference "
                         f"{len(want)}")
        self.assertEqual(got, want, f"{name} differs from the reference")

    # 20,000 events, 5 µs apart: the source paces them at that rate.
    CONF = ref.Config(events=20000, rate=200000, base_time=1600000000000)

    def test_q0_pass_through(self):
        want = [(b["auction"], b["bidder"], b["price"], ts_text(b["dateTime"]), b["extra"])
                for b in self.bids(self.CONF)]
        self.check_query("q0", self.CONF, want)

    def test_q1_currency_conversion(self):
        # 0.908 * price exactly, at DECIMAL's scale 3
        want = [(b["auction"], b["bidder"], "%d.%03d" % divmod(b["price"] * 908, 1000),
                 ts_text(b["dateTime"]), b["extra"]) for b in self.bids(self.CONF)]
        self.check_query("q1", self.CONF, want)

    def test_q2_selection(self):
        want = [(b["auction"], b["price"]) for b in self.bids(self.CONF)
                if b["auction"] % 123 == 0]
        self.check_query("q2", self.CONF, want)
        self.check_query("q2", self.CONF, want, parallelism=2)

    def test_q21_channel_id(self):
        ids = {"apple": "0", "google": "1", "facebook": "2", "baidu": "3"}
        want = []
        for b in self.bids(self.CONF):
            m = re.search(r"(&|^)channel_id=([^&]*)", b["url"])
            extracted = m.group(2) if m else None
            ch = b["channel"].lower()
            if extracted is not None or ch in ids:
                want.append((b["auction"], b["bidder"], b["price"], b["channel"],
                             ids.get(ch, extracted)))
        self.check_query("q21", self.CONF, want)
        self.check_query("q21", self.CONF, want, parallelism=2)

    def test_q22_url_directories(self):
        def piece(url, i):
            parts = url.split("/")
            return parts[i] if i < len(parts) else None

        want = [(b["auction"], b["bidder"], b["price"], b["channel"], piece(b["url"], 3),
                 piece(b["url"], 4), piece(b["url"], 5)) for b in self.bids(self.CONF)]
        self.check_query("q22", self.CONF, want)
        self.check_query("q22", self.CONF, want, parallelism=2)

    # ---- the queries with joins (issue 27) ----

    def events(self, conf):
        return list(ref.events(conf))

    def test_q3_local_item_suggestion(self):
        want = ref.q3(self.events(self.CONF))
        self.check_query("q3", self.CONF, want)
        self.check_query("q3", self.CONF, want, parallelism=2)

    def test_q7_highest_bid(self):
        # across two windows, as q8's
        conf = ref.Config(events=20000, rate=200000, base_time=1600000009950)
        want = [(a, bidder, price, ts_text(t), extra)
                for a, bidder, price, t, extra in ref.q7(self.events(conf))]
        self.check_query("q7", conf, want)

    def test_q8_monitor_new_users(self):
        # 50 ms before a window's end: the events fall into two windows
        conf = ref.Config(events=20000, rate=200000, base_time=1600000009950)
        want = [(i, name, ts_text(start)) for i, name, start in ref.q8(self.events(conf))]
        self.assertEqual(len({row[2] for row in want}), 2)
        self.check_query("q8", conf, want)

    def test_q20_expand_bid_with_auction(self):
        times = {5, 11, 12}  # bid dateTime, auction dateTime, expires
        want = [tuple(ts_text(v) if i in times else v for i, v in enumerate(row))
                for row in ref.q20(self.events(self.CONF))]
        self.check_query("q20", self.CONF, want)
        self.check_query("q20", self.CONF, want, parallelism=2)

    # 10,000 events 4 ms apart (40 s of event time, across a midnight),
    # generated as fast as they go.
    SPREAD = ref.Config(events=10000, rate=250, base_time=1600041600000 - 15000)

    def test_q11_sessions(self):
        want = q11_reference(self.bids(self.SPREAD), 10000)
        self.assertGreater(len(want), len({r[0] for r in want}), "a bidder has two sessions")
        self.check_query("q11", self.SPREAD, want, parallelism=2, fast=True)

    def test_q12_processing_time_windows(self):
        """Windows of the wall clock: which window a bid falls in depends
        on when it came, its bidder's total over the windows does not, and
        each window is 10 s of the wall clock."""
        out = self.out_path()
        self.sql(self.script("q12", self.SPREAD, f"connector = 'filesystem', path = '{out}', "
                             "format = 'csv'", True))
        rows = self.rows(out)
        totals = {}
        for bidder, n, start, end in rows:
            totals[bidder] = totals.get(bidder, 0) + int(n)
            s = datetime.datetime.strptime(start, "%Y-%m-%d %H:%M:%S.%f")
            e = datetime.datetime.strptime(end, "%Y-%m-%d %H:%M:%S.%f")
            self.assertEqual(e - s, datetime.timedelta(seconds=10), (start, end))
            self.assertEqual(s.second % 10 + s.microsecond, 0, start)
        want = {}
        for b in self.bids(self.SPREAD):
            want[str(b["bidder"])] = want.get(str(b["bidder"]), 0) + 1
        self.assertEqual(totals, want)

    def test_q14_udf_case_filter(self):
        def kind(ms):
            h = ms // 3600000 % 24
            return ("dayTime" if 8 <= h <= 18 else "nightTime" if h <= 6 or h >= 20
                    else "otherTime")

        # 10,000 events a second apart from 06:00: night, other and day time
        conf = ref.Config(events=10000, rate=1, base_time=1600041600000 + 6 * 3600000)
        want = [(b["auction"], b["bidder"], "%d.%03d" % divmod(b["price"] * 908, 1000),
                 kind(b["dateTime"]), ts_text(b["dateTime"]), b["extra"], b["extra"].count("c"))
                for b in self.bids(conf) if 1000000000 < b["price"] * 908 < 50000000000]
        self.assertEqual({r[3] for r in want}, {"dayTime", "nightTime", "otherTime"})
        self.check_query("q14", conf, want, fast=True)
        self.check_query("q14", conf, want, parallelism=2, fast=True)

    @staticmethod
    def day(ms):
        return ts_text(ms)[:10]

    def ranked(self, key):
        """q15 and q16's statistics of the bids grouped by key(bid)."""
        groups = {}
        for b in self.bids(self.SPREAD):
            groups.setdefault(key(b), []).append(b)
        ranks = [lambda p: True, lambda p: p < 10000, lambda p: 10000 <= p < 1000000,
                 lambda p: p >= 1000000]
        out = []
        for k, bs in groups.items():
            row = list(k)
            row += [sum(1 for b in bs if r(b["price"])) for r in ranks]
            row += [len({b["bidder"] for b in bs if r(b["price"])}) for r in ranks]
            row += [len({b["auction"] for b in bs if r(b["price"])}) for r in ranks]
            out.append((row, bs))
        return out

    def test_q15_distinct_counts_with_filters(self):
        want = [row for row, _ in self.ranked(lambda b: (self.day(b["dateTime"]),))]
        self.assertEqual(len(want), 2, "the events cross a midnight")
        self.check_query("q15", self.SPREAD, want, parallelism=2, fast=True, updating=True)

    def test_q16_per_channel(self):
        want = []
        for row, bs in self.ranked(lambda b: (b["channel"], self.day(b["dateTime"]))):
            want.append(row[:2] + [max(ts_text(b["dateTime"])[11:16] for b in bs)] + row[2:])
        self.check_query("q16", self.SPREAD, want, fast=True, updating=True)

    def test_q17_per_auction_and_day(self):
        groups = {}
        for b in self.bids(self.SPREAD):
            groups.setdefault((b["auction"], self.day(b["dateTime"])), []).append(b["price"])
        want = [(a, d, len(ps), sum(1 for p in ps if p < 10000),
                 sum(1 for p in ps if 10000 <= p < 1000000), sum(1 for p in ps if p >= 1000000),
                 min(ps), max(ps), sum(ps) // len(ps), sum(ps)) for (a, d), ps in groups.items()]
        self.check_query("q17", self.SPREAD, want, parallelism=2, fast=True, updating=True)

    def query_changelog(self, name, conf):
        """The SELECT of bench/nexmark/<name>.sql over ddl.sql with conf, its
        rows printed as a changelog (its sink, blackhole, takes updates);
        the kinds seen and the rows left once every change is applied."""
        before, select = self.script(name, conf, "connector = 'blackhole'").split(
            f"INSERT INTO nexmark_{name}", 1)
        kinds, rows = apply_changelog(self.sql(before + "\n" + select).stdout, name)
        return kinds, sorted((list(r) for r in rows), key=repr)

    def test_q18_last_bid(self):
        """Deduplication keeping the last row: +I of a bidder's first bid on
        an auction, -D of it and +I of a later one."""
        cols = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]
        want = sorted(([text(c, b[c]) for c in cols] for b in ref.q18(self.bids(self.CONF))),
                      key=repr)
        kinds, got = self.query_changelog("q18", self.CONF)
        self.assertEqual(kinds, {"+I", "-D"})
        self.assertGreater(len(want), 0)
        self.assertEqual(len(got), len(want), f"q18: {len(got)} rows, the reference "
                         f"{len(want)}")
        self.assertEqual(got, want, "q18 differs from the reference")

    def test_q19_top_10_price(self):
        """Top-N with the rank: each rank a new bid moves updated (-U, +U)."""
        cols = ["auction", "bidder", "price", "channel", "url", "dateTime", "extra"]
        want = sorted(([text(c, b[c]) for c in cols] + [str(rn)]
                       for b, rn in ref.q19(self.bids(self.CONF))), key=repr)
        kinds, got = self.query_changelog("q19", self.CONF)
        self.assertEqual(kinds, {"+I", "-U", "+U"})
        self.assertEqual(len(got), len(want), f"q19: {len(got)} rows, the reference "
                         f"{len(want)}")
        self.assertEqual(got, want, "q19 differs from the reference")

    # ---- changelogs consumed: q4, q5, q9 ----

    def test_q4_average_price_for_category(self):
        """A GROUP BY over a GROUP BY: each auction's highest bid a
        changelog (-U/+U as it grows) whose old values AVG takes back out."""
        want = ref.q4(self.events(self.SPREAD))
        self.check_query("q4", self.SPREAD, want, fast=True, updating=True)
        self.check_query("q4", self.SPREAD, want, parallelism=2, fast=True, updating=True)

    def test_q5_hot_items(self):
        """A regular join with a changelog (each window's largest count,
        -U/+U): the rows a larger count leaves behind retracted."""
        want = ref.q5(self.bids(self.SPREAD))
        self.check_query("q5", self.SPREAD, want, fast=True, updating=True)
        self.check_query("q5", self.SPREAD, want, parallelism=2, fast=True, updating=True)

    def test_q9_winning_bids(self):
        """Top-1 per auction over a regular join: -D of a winner a higher
        bid displaces."""
        cols = ref.Q9_AUCTION + ["auction", "bidder", "price", "dateTime", "extra"]
        want = [[text(c, v) for c, v in zip(cols, row)] for row in ref.q9(self.events(self.SPREAD))]
        self.check_query("q9", self.SPREAD, want, fast=True, updating=True)
    @staticmethod
    def partition_files(path):
        """Every line of every part file under path's partition folders:
        (the folder, the line's columns and the partition values read from
        the folder's names, unescaped); and the hidden (uncommitted) files
        left."""
        rows, hidden = [], []
        for folder, _, files in os.walk(path):
            rel = os.path.relpath(folder, path)
            values = [re.sub(r"%([0-9A-F]{2})", lambda m: chr(int(m.group(1), 16)),
                             step.split("=", 1)[1]) for step in rel.split("/") if rel != "."]
            for name in files:
                if name.startswith("."):
                    hidden.append(os.path.join(rel, name))
                    continue
                with open(os.path.join(folder, name)) as f:
                    rows += [(rel, parse_csv_line(line.rstrip("\n")) + values) for line in f]
        return rows, hidden

    def test_q10_partitioned_files(self):
        """Every bid in its partition folder dt=<day>/hm=<minute> (':' as
        %3A: Flink's escaping), its other columns in the part files, the
        partition values read back from the folder names; SPREAD's bids
        cross midnight (two days, two minutes)."""
        cols = ["auction", "bidder", "price", "dateTime", "extra", "dt", "hm"]
        want = sorted(((folder, [text(c, v) for c, v in zip(cols, row)])
                       for folder, row in ref.q10(self.bids(self.SPREAD))), key=repr)
        self.assertEqual({f for f, _ in want},
                         {"dt=2020-09-13/hm=23%3A59", "dt=2020-09-14/hm=00%3A00"})
        for parallelism in (1, 2):
            out = self.out_path()
            self.sql(self.script("q10", self.SPREAD, None, fast=True, output=out), parallelism)
            got, hidden = self.partition_files(os.path.join(out, "bid"))
            self.assertEqual(hidden, [], "uncommitted files are left")
            self.assertEqual(len(got), len(want), f"p{parallelism}: {len(got)} rows, the "
                             f"reference {len(want)}")
            self.assertEqual(sorted(got, key=repr), want, f"p{parallelism}: q10 differs from "
                             "the reference")

    # 4,000 events paced over 2 s across midnight: checkpoints while it runs.
    PACED = ref.Config(events=4000, rate=2000, base_time=1600041600000 - 1000)

    def test_q10_commits_each_partition_at_checkpoints(self):
        """q10 at p2 with a checkpoint every 200 ms: each checkpoint commits
        the part files of every partition written since the last; the rows
        read back equal the reference, none twice, none left uncommitted."""
        cols = ["auction", "bidder", "price", "dateTime", "extra", "dt", "hm"]
        want = sorted(((folder, [text(c, v) for c, v in zip(cols, row)])
                       for folder, row in ref.q10(self.bids(self.PACED))), key=repr)
        out = self.out_path()
        self.sql("SET 'execution.checkpointing.interval' = '200 ms';\n" +
                 self.script("q10", self.PACED, None, output=out), 2)
        got, hidden = self.partition_files(os.path.join(out, "bid"))
        self.assertEqual(hidden, [], "uncommitted files are left")
        self.assertEqual(sorted(got, key=repr), want, "q10 with checkpoints differs from the "
                         "reference")

    def test_partition_values_are_escaped_as_flink_does(self):
        """A partition value with characters unsafe in a path has them as
        %XX (Flink's PartitionPathUtils.escapePathName); a NULL or empty
        one is Flink's default partition."""
        values = ["a/b:c", "", None, "x=1%#{[]^'*?\\\"y\tz"]
        out = self.out_path()
        cases = " ".join(f"WHEN auction % 4 = {i} THEN " +
                         ("NULL" if v is None else "'" + v.replace("'", "''") + "'")
                         for i, v in enumerate(values))
        self.sql(self.ddl(self.CONF) +
                 "CREATE TABLE o (auction BIGINT, s VARCHAR) PARTITIONED BY (s) WITH ("
                 f"connector = 'filesystem', path = '{out}', format = 'csv');\n"
                 f"INSERT INTO o SELECT auction, CASE {cases} END FROM bid;", 2)
        got, hidden = self.partition_files(out)
        want = sorted(((f"s={ref.escape_path_name(values[b['auction'] % 4])}",
                        [str(b["auction"]), values[b["auction"] % 4] or "__DEFAULT_PARTITION__"])
                       for b in self.bids(self.CONF)), key=repr)
        self.assertEqual(hidden, [])
        self.assertEqual({f for f, _ in want}, {"s=a%2Fb%3Ac", "s=__DEFAULT_PARTITION__",
                                                "s=x%3D1%25%23%7B%5B%5D%5E%27%2A%3F%5C%22y%09z"})
        self.assertEqual(sorted(got, key=repr), want)

    def side_input(self):
        """Query 13's side input, a CSV file of ref.side_input()."""
        path = os.path.join(self.tmp, "side_input.csv")
        with open(path, "w") as f:
            f.write("".join(f"{k},{v}\n" for k, v in ref.side_input().items()))
        return path

    def test_q13_bounded_side_input_join(self):
        """A lookup join of each bid with the side input's file, as of its
        processing time; at parallelism 2 each subtask reads the file."""
        cols = ["auction", "bidder", "price", "dateTime"]
        want = [[text(c, b[c]) for c in cols] + [v]
                for b, v in ref.q13(self.bids(self.CONF), ref.side_input())]
        self.check_query("q13", self.CONF, want, fast=True)
        self.check_query("q13", self.CONF, want, parallelism=2, fast=True)

    # ---- errors ----

    def error_of(self, ddl):
        p = self.sql(ddl + "\nSELECT * FROM bid;\n", ok=False)
        self.assertNotEqual(p.returncode, 0, f"accepted: {ddl}")
        return p.stderr + p.stdout

    def test_errors(self):
        cases = [
            ("CREATE TABLE bid (auction BIGINT) WITH (connector = 'nexmark', tps = '5');",
             "the nexmark connector has no option 'tps'"),
            ("CREATE TABLE b (auction BIGINT) WITH (connector = 'nexmark');",
             "needs 'table' = 'bid', 'auction' or 'person'"),
            ("CREATE TABLE bid (auction BIGINT) WITH (connector = 'nexmark', table = 'bids');",
             "not 'bids'"),
            ("CREATE TABLE bid (seller BIGINT) WITH (connector = 'nexmark');",
             "column 'seller' is no field of a nexmark bid (auction, bidder, price, channel"),
            ("CREATE TABLE bid (price INT) WITH (connector = 'nexmark');",
             "column 'price' is BIGINT, not INT, in a nexmark bid"),
            ("CREATE TABLE bid (price BIGINT) WITH (connector = 'nexmark', "
             "\"first-event.rate\" = '10', \"next-event.rate\" = '20');",
             "not supported: 'next-event.rate' other than 'first-event.rate'"),
            ("CREATE TABLE bid (price BIGINT) WITH (connector = 'nexmark', "
             "\"bid.proportion\" = '0');", "option 'bid.proportion' is from 1 to"),
            ("CREATE TABLE bid (price BIGINT) WITH (connector = 'nexmark', "
             "\"bid.avg-size\" = '1 gigabyte');", "option 'bid.avg-size' = '1 gigabyte' is not a "
             "size"),
            ("CREATE TABLE bid (price BIGINT) WITH (connector = 'nexmark', "
             "\"events.num\" = 'many');", "option 'events.num' = 'many' is not an integer"),
        ]
        for ddl, want in cases:
            with self.subTest(ddl=ddl):
                self.assertIn(want, self.error_of(ddl))


if __name__ == "__main__":
    unittest.main()
