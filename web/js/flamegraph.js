// Flink's VertexFlameGraph ({name, value, children}) as an icicle of SVG
// rectangles: the root at the top, each frame as wide as its samples. A
// click on a frame zooms into it (its ancestors stay above it, full width);
// a click on the root zooms out.
import { svg } from "./dom.js";

const ROW = 18;

function depthOf(node) {
    return 1 + Math.max(0, ...(node.children || []).map(depthOf));
}

// A warm colour from the name, stable between refreshes.
function colour(name) {
    let h = 0;
    for (const c of name) h = (h * 31 + c.charCodeAt(0)) >>> 0;
    return `hsl(${10 + (h % 40)}, ${70 + (h % 20)}%, ${55 + (h % 15)}%)`;
}

// data: the graph; focus: the names from the root's child down to the
// frame zoomed into ([]: none); zoom(path) is called with a new focus.
export function flameGraph(data, width, focus, zoom) {
    // The zoomed frame's ancestors, as far as this graph still has them.
    const chain = [data];
    for (const name of focus) {
        const next = (chain[chain.length - 1].children || []).find((c) => c.name === name);
        if (!next) break;
        chain.push(next);
    }
    const top = chain[chain.length - 1];
    const height = (chain.length - 1 + depthOf(top)) * ROW;
    const root = svg("svg", { class: "flame", width, height, viewBox: `0 0 ${width} ${height}` });
    const frame = (node, path, x, w, depth) => {
        const g = svg("g", { class: "frame", "data-name": node.name, "data-value": node.value,
            onclick: () => zoom(path) },
        svg("title", {}, `${node.name} (${node.value} samples)`),
        svg("rect", { x, y: depth * ROW, width: w, height: ROW - 1,
            fill: depth === 0 ? "#d1d5db" : colour(node.name) }));
        if (w > 40)
            g.append(svg("text", { x: x + 3, y: depth * ROW + 13 },
                node.name.slice(0, Math.floor(w / 6.5))));
        root.append(g);
    };
    const draw = (node, path, x, w, depth) => {
        if (w < 0.5) return;
        frame(node, path, x, w, depth);
        let cx = x;
        for (const c of node.children || []) {
            const cw = node.value > 0 ? (w * c.value) / node.value : 0;
            draw(c, [...path, c.name], cx, cw, depth + 1);
            cx += cw;
        }
    };
    chain.slice(0, -1).forEach((n, d) => frame(n, focus.slice(0, d), 0, width, d));
    draw(top, chain.slice(1).map((n) => n.name), 0, width, chain.length - 1);
    return root;
}
