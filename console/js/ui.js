// SPDX-License-Identifier: BSD-2-Clause
// console/js/ui.js - what every view shares: the confirmation an action
// needs, alerts, and running an action against the API.

import {h, fill} from './dom.js';

// Ask before an action: a modal dialog (the keyboard stays in it, Escape
// cancels, Cancel has the focus). extra: inputs shown in it. Resolves
// true when confirmed.
export function confirm({title, text, ok, extra}) {
	const dlg = document.getElementById('confirm');
	fill(document.getElementById('confirm-title'), title);
	fill(document.getElementById('confirm-text'), text);
	fill(document.getElementById('confirm-extra'), extra || []);
	fill(document.getElementById('confirm-ok'), ok || 'Do it');
	dlg.returnValue = 'cancel';
	return new Promise(resolve => {
		dlg.addEventListener('close', () => resolve(dlg.returnValue === 'ok'), {once: true});
		dlg.showModal();
		document.getElementById('confirm-cancel').focus();
	});
}

// Show a message at the top of the page until dismissed (or replaced by
// the next with the same key).
export function alert(text, {key, info} = {}) {
	const box = document.getElementById('alerts');
	if (key)
		for (const old of box.querySelectorAll(`[data-key="${CSS.escape(key)}"]`))
			old.remove();
	const el = h('div', {class: ['alert', info && 'info'], 'data-key': key},
		h('p', {}, text),
		h('button', {class: 'small', type: 'button', 'aria-label': 'Dismiss',
			onclick: () => el.remove()}, 'Dismiss'));
	box.append(el);
	return el;
}

// Remove the alert of key.
export function unalert(key) {
	for (const el of document.querySelectorAll(`#alerts [data-key="${CSS.escape(key)}"]`))
		el.remove();
}

// Run fn (an API call) after a confirmation; say what came of it.
export async function act(question, fn, done) {
	if (!await confirm(question))
		return false;
	try {
		await fn();
		if (done)
			alert(done, {key: 'action', info: true});
		return true;
	} catch (e) {
		alert(`${question.title}: ${e.message}`, {key: 'action'});
		return false;
	}
}

// A message in place of a view's content, for what cannot be shown.
export function blocked(p) {
	return h('p', {class: 'note', 'data-denied': p.denied ? 'true' : undefined}, p.denied ?
		`Not shown: ${p.message} (your principal may not inspect this).` :
		`Could not read it: ${p.message}`);
}

// fn (an async reading) run one at a time: a call while it runs makes it
// run once more after, so the last call is always answered by a run that
// began after it. .busy() says whether it runs.
export function oneAtATime(fn) {
	let busy = false, again = false;
	const run = async () => {
		if (busy) {
			again = true;
			return;
		}
		busy = true;
		try {
			do {
				again = false;
				await fn();
			} while (again);
		} finally {
			busy = false;
		}
	};
	run.busy = () => busy;
	return run;
}
