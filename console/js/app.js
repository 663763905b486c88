// SPDX-License-Identifier: BSD-2-Clause
// console/js/app.js - the console's entry: who we are to the daemon, the
// header, and the views by the location's fragment:
//   #/ or #/names?prefix=P   the semaphores under P (list.js)
//   #/name/NAME              one semaphore (name.js)
//   #/holds?principal=P      the holds of a principal (holds.js)
//   #/sessions?principal=P   the sessions one may see (sessions.js)
//   #/cluster                the cluster (cluster.js)
//   #/settings               a bearer token (signin.js)

import {whoami, onServer, getBase} from './api.js';
import {fill} from './dom.js';
import {onLiveState} from './live.js';
import {unalert} from './ui.js';
import * as list from './list.js';
import * as name from './name.js';
import * as holds from './holds.js';
import * as sessions from './sessions.js';
import * as cluster from './cluster.js';
import * as signin from './signin.js';

const views = {names: list, name, holds, sessions, cluster, settings: signin};
const main = document.getElementById('main');
const ctx = {server: null, refresh};
let current = null, first = true;

// Say who we are and to which daemon in the header.
function drawWho(srv) {
	ctx.server = srv;
	const node = srv.node_id ? ` · node ${srv.node_id}${srv.leader_id === srv.node_id ? ' (leader)' :
		srv.leader_id ? `, leader ${srv.leader_id}` : ', no leader'}` : '';
	fill(document.getElementById('who'),
		`${srv.principal}${srv.admin ? ' (admin)' : ''} · ${srv.server} · ${srv.mode}${node}` +
		(getBase() ? ` · via ${getBase()}` : ''));
}

async function refresh() {
	try {
		await whoami();
	} catch (e) {
		fill(document.getElementById('who'), `the daemon did not answer: ${e.message}`);
	}
}

// The view and its parameters of a fragment.
function parse(hash) {
	const m = /^#\/([a-z]*)(?:\/([^?]*))?(?:\?(.*))?$/.exec(hash || '');
	const params = new URLSearchParams(m && m[3] || '');
	let view = m && m[1] || 'names';
	if (view === 'name') {
		try {
			params.name = decodeURIComponent(m[2] || '');
		} catch {
			view = 'names';
		}
		if (!params.name)
			view = 'names';
	}
	return {view: views[view] ? view : 'names', params};
}

function route() {
	if (current)
		current.unmount();
	unalert('action');	/* what an action came to belongs to its view */
	const {view, params} = parse(location.hash);
	for (const a of document.querySelectorAll('nav a[data-view]'))
		if (a.dataset.view === (view === 'name' ? 'names' : view))
			a.setAttribute('aria-current', 'page');
		else
			a.removeAttribute('aria-current');
	document.title = `semd console · ${view === 'name' ? params.name : view}`;
	current = views[view].mount(main, params, ctx);
	/* after a move by the user, the keyboard starts at the new view */
	if (!first) {
		const h1 = main.querySelector('h1');
		if (h1)
			h1.focus();
	}
	first = false;
}

onServer(drawWho);
onLiveState(({state, text, rev}) => {
	document.getElementById('live').dataset.state = state;
	const t = document.getElementById('live-text');
	if (t.textContent !== text)
		fill(t, text);
	fill(document.getElementById('live-rev'), rev ? ` · revision ${rev}` : '');
});
window.addEventListener('hashchange', route);
performance.mark('app-start');
await refresh();
performance.mark('server-known');
route();
