// SPDX-License-Identifier: BSD-2-Clause
// console/js/api.js - the daemon's HTTP API (/v1, doc/http.md): who we are
// to it (a bearer token kept for this tab only, or the browser's own
// credentials), where it answers (this node, or the leader of a cluster),
// requests and their problems (RFC 9457).

import {sawDateHeader} from './dom.js';

const TOKEN_KEY = 'semd-console-token';

// The base of the API: '' is the node that served the page; in a cluster
// whose leader is another node, that node's URL (its http-nodes entry).
let base = '';
let token = sessionStorage.getItem(TOKEN_KEY) || '';

// A failure the daemon answered (problem+json) or a request that failed.
export class Problem extends Error {
	constructor(status, body, fallback) {
		const detail = body && (body.detail || body.title) || fallback || `HTTP ${status}`;
		super(detail);
		this.status = status;
		this.error = body && body.error || (status === 0 ? 'unreachable' : '');
		this.body = body || {};
	}
	// Denied or hidden: the principal may not see what it asked for.
	get denied() {
		return this.status === 401 || this.status === 403;
	}
}

export function getToken() {
	return token;
}

// Keep a bearer token for this tab ('' forgets it).
export function setToken(t) {
	token = t;
	if (t)
		sessionStorage.setItem(TOKEN_KEY, t);
	else
		sessionStorage.removeItem(TOKEN_KEY);
}

export function getBase() {
	return base;
}

// Send the API's requests to another node from now on ('' this one).
export function setBase(url) {
	base = url && new URL(url).origin !== location.origin ? new URL(url).origin : '';
}

// The headers of a request: JSON, and the token when there is one.
export function headers(extra) {
	const hd = {Accept: 'application/json', ...extra};
	if (token)
		hd.Authorization = `Bearer ${token}`;
	return hd;
}

// A URL of the API: path under /v1, query members (undefined ones left out).
export function url(path, query) {
	const q = new URLSearchParams();
	for (const [k, v] of Object.entries(query || {}))
		if (v !== undefined && v !== null && v !== '')
			q.set(k, String(v));
	const qs = q.toString();
	return `${base}/v1${path}${qs ? `?${qs}` : ''}`;
}

// One path segment: a semaphore's name, percent-encoded ('/' included).
export function seg(s) {
	return encodeURIComponent(s);
}

// A request; the JSON it answers (null for none), or a Problem thrown. One
// that failed the way a moved leader makes requests fail (no answer, 503,
// a redirect that lost the token: 401) is sent again, once, if the node
// that served the page names another leader now.
export async function api(method, path, opts = {}) {
	try {
		return await request(method, path, opts);
	} catch (e) {
		if (opts.local || ![0, 401, 503].includes(e.status))
			throw e;
		const before = base;
		try {
			await whoami();
		} catch {
			throw e;
		}
		if (base === before)
			throw e;
		return request(method, path, opts);
	}
}

async function request(method, path, {query, body, local} = {}) {
	const init = {
		method,
		headers: headers(body !== undefined ? {'Content-Type': 'application/json'} : {}),
		cache: 'no-store',
		credentials: 'same-origin',
		redirect: 'follow',
	};
	if (body !== undefined)
		init.body = JSON.stringify(body);
	let r;
	const target = local ? `/v1${path}` : url(path, query);
	try {
		r = await fetch(target, init);
	} catch (e) {
		throw new Problem(0, null, `the daemon did not answer (${e.message})`);
	}
	sawDateHeader(r.headers.get('Date'));
	const type = r.headers.get('Content-Type') || '';
	let data = null;
	if (r.status !== 204 && /json/.test(type)) {
		try {
			data = await r.json();
		} catch (e) {
			throw new Problem(r.status, null, `a broken answer (${e.message})`);
		}
	}
	if (!r.ok)
		throw new Problem(r.status, data);
	return data;
}

const serverListeners = new Set();
// Call fn with what /v1/server says, each time it is asked.
export function onServer(fn) {
	serverListeners.add(fn);
}

// Who we are and which daemon, always asked of the node that served the
// page (answered by followers too); moves the base to the leader.
export async function whoami() {
	const srv = await api('GET', '/server', {local: true});
	if (srv.mode === 'cluster' && srv.leader_id && srv.leader_id !== srv.node_id &&
	    srv.leader_url)
		setBase(srv.leader_url);
	else
		setBase('');
	for (const fn of serverListeners)
		fn(srv);
	return srv;
}

// Every page of a list: GET path with query, following `next` (at most
// `max` items; 0: all).
export async function all(path, query, max) {
	const items = [];
	let after;
	for (let i = 0; i < 10000; i++) {
		const page = await api('GET', path, {query: {...query, after}});
		items.push(...page.items);
		if (!page.next || (max && items.length >= max))
			break;
		after = page.next;
	}
	return items;
}
