// SPDX-License-Identifier: BSD-2-Clause
// console/js/dom.js - building the page without markup strings (every text
// the daemon sends, a name above all, goes in as text: the page's policy
// forbids innerHTML outright), and formatting figures for people.

const SVG = 'http://www.w3.org/2000/svg';

// Set attributes, handlers and properties of el from props.
function apply(el, props) {
	for (const [k, v] of Object.entries(props || {})) {
		if (v === undefined || v === null || v === false)
			continue;
		if (k === 'class')
			el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
		else if (k === 'text')
			el.textContent = String(v);
		else if (k.startsWith('on') && typeof v === 'function')
			el.addEventListener(k.slice(2), v);
		else if (k === 'value' || k === 'checked')
			el[k] = v;
		else
			el.setAttribute(k, v === true ? '' : String(v));
	}
}

// Append children: nodes, strings (as text), arrays of them; skip empties.
function append(el, kids) {
	for (const k of kids.flat(Infinity)) {
		if (k === undefined || k === null || k === false)
			continue;
		el.append(k instanceof Node ? k : document.createTextNode(String(k)));
	}
}

// An HTML element: h('td', {class: 'num'}, '12').
export function h(tag, props, ...kids) {
	const el = document.createElement(tag);
	apply(el, props);
	append(el, kids);
	return el;
}

// An SVG element: s('rect', {x: 0, width: 4}).
export function s(tag, props, ...kids) {
	const el = document.createElementNS(SVG, tag);
	apply(el, props);
	append(el, kids);
	return el;
}

// Replace the children of el.
export function fill(el, ...kids) {
	el.replaceChildren();
	append(el, kids);
	return el;
}

// A table in a wrapper that scrolls sideways and can take the focus.
export function table(caption, heads, body) {
	return h('div', {class: 'scroll', tabindex: 0, role: 'region', 'aria-label': caption},
		h('table', {},
			h('caption', {}, caption),
			h('thead', {}, h('tr', {}, heads.map(x => typeof x === 'string' ?
				h('th', {scope: 'col'}, x) : h('th', {scope: 'col', class: x.class}, x.text)))),
			body));
}

// A duration in ms for people: 850 ms, 12.4 s, 3 min 4 s, 2 h 3 min, 4 d 2 h.
export function duration(ms) {
	if (ms === null || ms === undefined || !Number.isFinite(ms))
		return '—';
	if (ms < 0)
		ms = 0;
	if (ms < 1000)
		return `${Math.round(ms)} ms`;
	const sec = ms / 1000;
	if (sec < 60)
		return `${sec < 10 ? sec.toFixed(1) : Math.floor(sec)} s`;
	const m = Math.floor(sec / 60), hr = Math.floor(m / 60), d = Math.floor(hr / 24);
	if (m < 60)
		return `${m} min ${Math.floor(sec % 60)} s`;
	if (hr < 24)
		return `${hr} h ${m % 60} min`;
	return `${d} d ${hr % 24} h`;
}

// A unix time in ms as a local date and time (an ISO-like, sortable form).
export function when(ms) {
	if (!ms)
		return '—';
	const d = new Date(ms), p = n => String(n).padStart(2, '0');
	return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ` +
		`${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

// A count with thousands separated (one formatter: making one is slow).
const numbers = new Intl.NumberFormat('en');
export function count(n) {
	return n === undefined || n === null ? '—' : numbers.format(n);
}

// The difference between the daemon's clock and ours, learnt from what it
// says (the Date of its answers, the times of its events): ms to add to ours.
let skew = 0;
export function serverNow() {
	return Date.now() + skew;
}
// Learn from a time the daemon stamped (an event's time_ms): it is not in
// the future, so our estimate is at least that.
export function sawServerTime(ms) {
	if (ms && ms > Date.now() + skew)
		skew = ms - Date.now();
}
// Learn from an answer's Date header (one second's resolution).
export function sawDateHeader(value) {
	const t = Date.parse(value || '');
	if (Number.isFinite(t) && Math.abs(t + 500 - (Date.now() + skew)) > 1500)
		skew = t + 500 - Date.now();
}

// Move on, every second, the durations under root that our clock makes
// (held for, waited for, lease left): data-since and data-until times.
export function ticking(root) {
	return setInterval(() => {
		const now = serverNow();
		for (const el of root.querySelectorAll('[data-since]'))
			el.textContent = duration(now - Number(el.dataset.since));
		for (const el of root.querySelectorAll('[data-until]'))
			el.textContent = duration(Number(el.dataset.until) - now);
	}, 1000);
}
