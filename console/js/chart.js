// SPDX-License-Identifier: BSD-2-Clause
// console/js/chart.js - histograms of waits and holds as SVG bars, in the
// daemon's buckets: bucket i counts durations of at most 2^i ms (the last,
// longer ones), as /v1/stats and semd_wait_seconds have them.

import {h, s, duration, count} from './dom.js';

export const BUCKETS = 32;

// A histogram to fill: {count, sum_ms, buckets: [{le_ms, count}]}.
export function emptyHist() {
	const buckets = [];
	for (let i = 0; i < BUCKETS; i++)
		buckets.push({le_ms: i < BUCKETS - 1 ? 2 ** i : null, count: 0});
	return {count: 0, sum_ms: 0, buckets};
}

// Count a duration (ms) in hist, in the bucket the daemon would.
export function histAdd(hist, ms) {
	ms = Math.max(0, Math.round(ms));
	const i = ms <= 1 ? 0 : Math.ceil(Math.log2(ms));
	hist.buckets[Math.min(i, hist.buckets.length - 1)].count++;
	hist.sum_ms += ms;
	hist.count++;
}

// hist with every bucket, in the daemon's order: /v1/stats lists only the
// buckets that count something.
function whole(hist) {
	if (!hist)
		return emptyHist();
	const out = emptyHist();
	out.count = hist.count || 0;
	out.sum_ms = hist.sum_ms || 0;
	for (const b of hist.buckets || []) {
		const i = b.le_ms === null || b.le_ms === undefined ? BUCKETS - 1 :
			Math.min(BUCKETS - 1, Math.round(Math.log2(Math.max(1, b.le_ms))));
		out.buckets[i].count += b.count;
	}
	return out;
}

// The upper bound of the bucket holding quantile q (null: +Inf).
function quantile(hist, q) {
	const want = Math.ceil(hist.count * q);
	let seen = 0;
	for (const b of hist.buckets) {
		seen += b.count;
		if (seen >= want && seen > 0)
			return b.le_ms;
	}
	return null;
}

// A bucket's bound, short: 1ms, 512ms, 2s, 17min, +Inf.
function bound(le) {
	if (le === null || le === undefined)
		return '+Inf';
	if (le < 1000)
		return `${le}ms`;
	if (le < 120000)
		return `${Math.round(le / 1000)}s`;
	if (le < 7200000)
		return `${Math.round(le / 60000)}min`;
	return `${Math.round(le / 3600000)}h`;
}

// One sentence that says what the picture shows (for a screen reader too).
// what: [one, many] ('wait seen', 'waits seen').
export function describe(hist, what) {
	if (!hist || !hist.count)
		return `no ${what[1]} yet`;
	const p50 = quantile(hist, 0.5), p99 = quantile(hist, 0.99);
	return `${count(hist.count)} ${hist.count === 1 ? what[0] : what[1]}, mean ${duration(hist.sum_ms / hist.count)}, ` +
		`half at most ${p50 === null ? 'longer' : duration(p50)}, ` +
		`99% at most ${p99 === null ? 'longer' : duration(p99)}`;
}

// A figure: a caption, the bars, and the sentence; what: [one, many].
export function histogram(title, hist, kind, what) {
	hist = whole(hist);
	const text = describe(hist, what);
	const fig = h('figure', {class: 'hist-figure', 'data-kind': kind},
		h('figcaption', {}, title));
	const bk = hist ? hist.buckets : [];
	let lo = bk.findIndex(b => b.count > 0), hi = bk.length - 1;
	while (hi > 0 && bk[hi].count === 0)
		hi--;
	if (lo < 0) {
		lo = 0;
		hi = -1;
	}
	lo = Math.max(0, Math.min(lo, hi - 5));	/* at least six bars when any */
	const shown = bk.slice(lo, hi + 1);
	const W = 320, H = 150, top = 16, bottom = 28, left = 4;
	const max = Math.max(1, ...shown.map(b => b.count));
	const bw = shown.length ? (W - left * 2) / shown.length : 0;
	const svg = s('svg', {class: `hist ${kind}`, viewBox: `0 0 ${W} ${H}`, role: 'img',
		'aria-label': `${title}: ${text}`, focusable: 'false'});
	svg.append(s('line', {class: 'axis', x1: 0, x2: W, y1: H - bottom, y2: H - bottom}));
	shown.forEach((b, i) => {
		const bh = (H - top - bottom) * b.count / max;
		const x = left + i * bw;
		const bar = s('rect', {class: 'bar', x: x + 1, width: Math.max(1, bw - 2),
			y: H - bottom - bh, height: bh});
		bar.append(s('title', {}, `≤ ${bound(b.le_ms)}: ${count(b.count)}`));
		svg.append(bar);
		if (b.count > 0)
			svg.append(s('text', {x: x + bw / 2, y: H - bottom - bh - 3, 'text-anchor': 'middle'},
				count(b.count)));
		if (i % Math.ceil(shown.length / 6) === 0)
			svg.append(s('text', {x: x + bw / 2, y: H - bottom + 14, 'text-anchor': 'middle'},
				bound(b.le_ms)));
	});
	fig.append(svg, h('p', {class: 'note hist-text'}, text));
	return fig;
}
