// Building the page: elements from data (text is always text, never HTML)
// and the figures' formats.

const SVG = "http://www.w3.org/2000/svg";

function make(node, attrs, children) {
    for (const [k, v] of Object.entries(attrs || {})) {
        if (v === undefined || v === null || v === false) continue;
        if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
        else if (k === "dataset") Object.assign(node.dataset, v);
        else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children.flat(Infinity)) {
        if (c === undefined || c === null || c === false) continue;
        node.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return node;
}

// el("td", {class: "num"}, "12"): an HTML element.
export function el(tag, attrs, ...children) {
    return make(document.createElement(tag), attrs, children);
}

// svg("rect", {x: 1}): an SVG element.
export function svg(tag, attrs, ...children) {
    return make(document.createElementNS(SVG, tag), attrs, children);
}

// A table of rows: columns [{title, value(row) -> text or node, num}],
// onclick(row) makes rows links.
export function table(columns, rows, onclick) {
    return el("table", {},
        el("thead", {}, el("tr", {}, columns.map((c) => el("th", { class: c.num && "num" }, c.title)))),
        el("tbody", {}, rows.map((r) => el("tr", {
            class: onclick && "link", onclick: onclick && (() => onclick(r)),
        }, columns.map((c) => el("td", { class: c.num && "num" }, c.value(r)))))));
}

// Tabs: links to page/<tab> for [[tab, title]], current one marked.
export function tabs(page, list, current) {
    return el("nav", { class: "tabs" }, list.map(([t, title]) =>
        el("a", { href: `${page}/${t}`, class: t === current ? "active" : null }, title)));
}

export function state(s) {
    return el("span", { class: `state ${s}` }, s);
}

export function bytes(n) {
    if (n === undefined || n === null || n < 0) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let i = 0;
    while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
    return `${i === 0 ? n : n.toFixed(1)} ${units[i]}`;
}

export function duration(ms) {
    if (ms === undefined || ms === null || ms < 0) return "–";
    if (ms < 1000) return `${ms} ms`;
    const s = Math.floor(ms / 1000), parts = [];
    const d = Math.floor(s / 86400), h = Math.floor(s / 3600) % 24, m = Math.floor(s / 60) % 60;
    if (d) parts.push(`${d}d`);
    if (h) parts.push(`${h}h`);
    if (m) parts.push(`${m}m`);
    parts.push(`${s % 60}s`);
    return parts.join(" ");
}

export function time(ts) {
    if (!ts || ts < 0) return "–";
    return new Date(ts).toISOString().replace("T", " ").replace(/\.\d+Z$/, "");
}

// Records per second: "1,234.5".
export function rate(x) {
    if (x === undefined || x === null || Number.isNaN(x)) return "–";
    return x.toLocaleString("en-US", { maximumFractionDigits: 1 });
}

export function count(x) {
    return x === undefined || x === null ? "–" : x.toLocaleString("en-US");
}

// A watermark (ms since the epoch); Long.MIN_VALUE and below: none yet.
export function watermark(w) {
    return w === undefined || w === null || w <= -9.2e18 ? "No Watermark" : time(w);
}
