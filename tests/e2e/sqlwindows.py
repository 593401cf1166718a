"""The reference for spate SQL's windows, written in Python: the rows of a
table with event time, in the order the source reads them, go through
TUMBLE, HOP or SESSION windows as Flink assigns them, with the watermark
after each row (pipeline.auto-watermark-interval 0: max(ts) - bound - 1)
deciding which rows come too late (a window whose end - 1 the watermark
reached takes no more rows; a session fires and closes when the watermark
reaches its end - 1). Each closed window's rows go to a function that
gives its output rows."""

import datetime

EPOCH = datetime.datetime(1970, 1, 1)


def ms_of(text):
    """A TIMESTAMP(3) text as milliseconds since the epoch."""
    t = datetime.datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f")
    return (t - EPOCH) // datetime.timedelta(milliseconds=1)


def text_of(ms):
    """Milliseconds as spate writes a TIMESTAMP(3)."""
    t = EPOCH + datetime.timedelta(milliseconds=ms)
    return t.strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def windows(rows, ts_col, bound_ms, kind, size_ms=0, slide_ms=0, gap_ms=0, key=None):
    """The windows of rows: a list of (start, end, key, rows of the window),
    and the number of (row, window) pairs dropped as late. key: a function
    of a row giving its group (sessions are per group; tumbling and hopping
    windows are grouped after)."""
    wm = None
    max_ts = None
    out, dropped = [], 0
    buckets = {}   # (start, end, key) -> rows, tumbling and hopping windows
    sessions = {}  # key -> list of [start, end, rows]

    def late(end):
        return wm is not None and end - 1 <= wm

    for r in rows:
        ts_text = r[ts_col]
        if ts_text is None:
            dropped += 1
            continue
        ts = ms_of(ts_text)
        k = key(r) if key else ()
        if kind == "tumble":
            start = ts - ts % size_ms
            spans = [(start, start + size_ms)]
        elif kind == "hop":
            spans = []
            start = ts - ts % slide_ms
            while start > ts - size_ms:
                spans.append((start, start + size_ms))
                start -= slide_ms
        if kind in ("tumble", "hop"):
            for s, e in spans:
                if late(e):
                    dropped += 1
                else:
                    buckets.setdefault((s, e, k), []).append(r)
        else:
            mine = sessions.setdefault(k, [])
            s, e = ts, ts + gap_ms
            overlap = [w for w in mine if w[0] < e and s < w[1]]
            if not overlap and late(e):
                dropped += 1
            else:
                merged = [r]
                for w in overlap:
                    s, e = min(s, w[0]), max(e, w[1])
                    merged += w[2]
                    mine.remove(w)
                mine.append([s, e, merged])
        max_ts = ts if max_ts is None else max(max_ts, ts)
        wm = max_ts - bound_ms - 1
        for k2, mine in sessions.items():
            for w in [w for w in mine if w[1] - 1 <= wm]:
                out.append((w[0], w[1], k2, w[2]))
                mine.remove(w)
    for (s, e, k), rs in buckets.items():
        out.append((s, e, k, rs))
    for k, mine in sessions.items():
        for w in mine:
            out.append((w[0], w[1], k, w[2]))
    return out, dropped


# Aggregates as SQL computes them over a window's rows (NULLs skipped).
def count(rows, col=None):
    return len(rows) if col is None else sum(1 for r in rows if r[col] is not None)


def values(rows, col):
    return [r[col] for r in rows if r[col] is not None]


def agg_sum(rows, col):
    v = values(rows, col)
    return sum(v) if v else None


def agg_min(rows, col):
    v = values(rows, col)
    return min(v) if v else None


def agg_max(rows, col):
    v = values(rows, col)
    return max(v) if v else None


def agg_avg(rows, col):
    v = values(rows, col)
    return sum(v) / len(v) if v else None


def count_distinct(rows, col):
    return len(set(values(rows, col)))
