// SPDX-License-Identifier: BSD-2-Clause
// tests/console/console.mjs - the web console (/ui/) in a real browser:
// Debian's headless Chromium driven by puppeteer-core, against a live semd
// this test starts, changed with semctl beside the pages:
//  - a name created with semctl appears in the list, live;
//  - a semctl down shows as a holder with its token; a waiter appears in
//    the queue and moves to the holders on an up;
//  - a force-release from the page (keyboard only) reaches the holder:
//    semctl run exits 5; a waiter cancelled, a limit set, a name deleted
//    from the page, each after its confirmation;
//  - a principal without the inspect right sees nothing of another's names,
//    in the list, in the stream, in a name's page;
//  - both stream readers (EventSource without a token, fetch with one) go
//    on across a daemon restart; no page reload anywhere;
//  - the page obeys its Content-Security-Policy (no violation, no error),
//    reflows at 200% zoom, and its text has at least 4.5:1 contrast;
//  - a 1,000-name, 10,000-waiter state: the list's time to render, logged
//    (not asserted: speed is measured, not tested).
// Screenshots of the main views go to $SEMD_CONSOLE_SHOTS when set (doc/).
//
// Environment: SEMD, SEMCTL, PROBE (semd_probe), CONSOLE_NODE_MODULES,
// CHROMIUM (default /usr/bin/chromium); SEMD_TEST_DURABLE, SEMD_TEST_THREADS
// as the other daemon tests. Prints TAP and 'N passed, N failed'.

import {spawn} from 'node:child_process';
import {createRequire} from 'node:module';
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const require = createRequire(path.join(process.env.CONSOLE_NODE_MODULES || 'node_modules', 'x'));
const puppeteer = require('puppeteer-core');

const SEMD = process.env.SEMD, SEMCTL = process.env.SEMCTL, PROBE = process.env.PROBE;
const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const SHOTS = process.env.SEMD_CONSOLE_SHOTS || '';
const DURABLE = !!process.env.SEMD_TEST_DURABLE;
const T = fs.mkdtempSync(path.join(os.tmpdir(), 'semd-console-'));
const WAIT = 10000;		/* ms: the longest any one condition is waited for */
const t0 = Date.now();

let passed = 0, failed = 0, n = 0;
const children = new Set();
let semd = null, browser = null, base = '';

function log(...a) {
	console.log('#', ...a);
}

// One check: ok or not ok, with why.
function check(cond, what, why) {
	n++;
	if (cond) {
		passed++;
		console.log(`ok ${n} - ${what}`);
	} else {
		failed++;
		console.log(`not ok ${n} - ${what}${why ? `: ${why}` : ''}`);
	}
}

// Run a step: its checks, or one failure with the error that stopped it.
async function step(what, fn) {
	log(`--- ${what} (${((Date.now() - t0) / 1000).toFixed(1)} s)`);
	try {
		await fn();
	} catch (e) {
		check(false, what, e && e.stack || String(e));
	}
}

const sleep = ms => new Promise(r => setTimeout(r, ms));

// Wait for fn() to be true: at most ms, every 50 ms.
async function until(what, fn, ms = WAIT) {
	const end = Date.now() + ms;
	while (Date.now() < end) {
		if (await fn())
			return;
		await sleep(50);
	}
	throw new Error(`timed out after ${ms} ms waiting for ${what}`);
}

// --- processes ----------------------------------------------------------

// Start a program; its exit is awaited by .done ({code, signal}).
function start(cmd, args, opts = {}) {
	const out = [];
	const p = spawn(cmd, args, {env: {...process.env, SEMD_SERVER: `unix:${T}/semd.sock`, ...opts.env},
		stdio: ['ignore', 'pipe', 'pipe']});
	p.stdout.on('data', d => out.push(d));
	p.stderr.on('data', d => out.push(d));
	children.add(p);
	// 'exit' can come before the last of the output (Node's stdio streams
	// may still be open then): the result waits for 'close', at most 2 s
	// (a grandchild could hold the pipes open).
	p.done = new Promise(resolve => p.on('exit', (code, signal) => {
		let done = false;
		const finish = () => {
			if (done)
				return;
			done = true;
			clearTimeout(timer);
			children.delete(p);
			resolve({code, signal, out: Buffer.concat(out).toString()});
		};
		const timer = setTimeout(finish, 2000);
		p.once('close', finish);
	}));
	p.output = () => Buffer.concat(out).toString();
	return p;
}

// Run semctl ARGS to its end (bounded): {code, out}.
async function semctl(...args) {
	const p = start(SEMCTL, args);
	const timer = setTimeout(() => p.kill('SIGKILL'), WAIT);
	const r = await p.done;
	clearTimeout(timer);
	return r;
}

// semctl that must succeed: its output.
async function must(...args) {
	const r = await semctl(...args);
	if (r.code !== 0)
		throw new Error(`semctl ${args.join(' ')}: exit ${r.code}: ${r.out}`);
	return r.out.trim();
}

function token() {
	return crypto.randomBytes(32).toString('hex');
}
const tokens = {alice: token(), bob: token()};
const sha = t => crypto.createHash('sha256').update(t).digest('hex');

// The daemon's configuration: alice an administrator, bob kept out of ops/,
// anonymous (a browser without a token) may look at everything.
function writeConf(port) {
	fs.writeFileSync(`${T}/semd.conf`, [
		`listen unix:${T}/semd.sock`,
		`listen http:127.0.0.1:${port}`,
		'admin cn:alice',
		`http-token cn:alice sha256:${sha(tokens.alice)}`,
		`http-token cn:bob sha256:${sha(tokens.bob)}`,
		'acl cn:bob ops/ none',
		'acl anonymous * inspect',
		'',
	].join('\n'));
}

// Start semd (port 0: any free one); its HTTP base URL.
async function startSemd(port) {
	writeConf(port);
	fs.rmSync(`${T}/ready`, {force: true});
	const args = ['--config', `${T}/semd.conf`, '--ready-file', `${T}/ready`];
	if (process.env.SEMD_TEST_THREADS)
		args.push('--threads', process.env.SEMD_TEST_THREADS);
	if (DURABLE)
		args.push('--data-dir', `${T}/data`);
	const logfd = fs.openSync(`${T}/semd.log`, 'a');
	semd = spawn(SEMD, args, {stdio: ['ignore', logfd, logfd]});
	fs.closeSync(logfd);
	children.add(semd);
	const me = semd;
	semd.done = new Promise(resolve => me.on('exit', (code, signal) => {
		children.delete(me);
		resolve({code, signal});
	}));
	let exited = null;
	semd.done.then(r => {
		exited = r;
	});
	await until('semd ready', () => {
		if (exited)
			throw new Error(`semd exited (${exited.code ?? exited.signal}): ` +
				fs.readFileSync(`${T}/semd.log`, 'utf8').slice(-2000));
		try {
			return /^http:/m.test(fs.readFileSync(`${T}/ready`, 'utf8'));
		} catch {
			return false;
		}
	});
	const addr = /^http:(.*)$/m.exec(fs.readFileSync(`${T}/ready`, 'utf8'))[1].trim();
	return `http://${addr}`;
}

async function stopSemd() {
	semd.kill('SIGTERM');
	const timer = setTimeout(() => semd.kill('SIGKILL'), WAIT);
	await semd.done;
	clearTimeout(timer);
}

// Send text as it is on one connection (fetch would resolve a path's dots);
// what came back once done(it) is true.
function raw(text, done) {
	const u = new URL(base);
	return new Promise((resolve, reject) => {
		const sock = net.connect(Number(u.port), u.hostname);
		let got = '';
		sock.setTimeout(WAIT, () => sock.destroy(new Error(`no whole answer to ${text}`)));
		sock.on('connect', () => sock.write(text));
		sock.on('data', d => {
			got += d;
			if (done(got)) {
				resolve(got);
				sock.destroy();
			}
		});
		sock.on('error', reject);
		sock.on('close', () => reject(new Error(`closed after ${JSON.stringify(got.slice(0, 200))}`)));
	});
}

// The status of GET path, sent as it is.
async function rawStatus(path) {
	const got = await raw(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`, d => /^HTTP\/1\.[01] \d{3}/.test(d));
	return Number(got.slice(9, 12));
}

// The first of n consecutive free TCP ports on 127.0.0.1 (a cluster's peers
// must know each other's ports before they start), at random below the
// ephemeral range, so that no connection of a test beside this one holds one.
async function freeBlock(n) {
	const free = port => new Promise(resolve => {
		const srv = net.createServer();
		srv.once('error', () => resolve(false));
		srv.listen(port, '127.0.0.1', () => srv.close(() => resolve(true)));
	});
	const lo = Number(fs.readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').split(/\s+/)[0]);
	for (let tries = 0; tries < 200; tries++) {
		const b = 10000 + Math.floor(Math.random() * (Math.min(lo, 32768) - n - 10000));
		let ok = true;
		for (let p = b; p < b + n && ok; p++)
			ok = await free(p);
		if (ok)
			return b;
	}
	throw new Error(`no free block of ${n} ports`);
}

// --- pages --------------------------------------------------------------

const problems = [];	/* console errors, page errors, CSP violations */

// A page of context ctx, its problems noted as who's; origins: where it may
// send requests (the daemon that serves it, or a cluster's nodes).
async function newPage(ctx, who, origins = [new URL(base).origin]) {
	const page = await ctx.newPage();
	await page.setViewport({width: 1280, height: 860});
	page.on('console', m => {
		if (m.type() === 'error')
			problems.push(`${who}: console: ${m.text()}`);
	});
	page.on('pageerror', e => problems.push(`${who}: page error: ${e.message}`));
	page.on('requestfailed', r => {
		const u = r.url();
		/* a stream cut by a restart or a view change is expected */
		if (!u.includes('/v1/watch') && !u.includes('/v1/server') &&
		    r.failure() && r.failure().errorText !== 'net::ERR_ABORTED')
			problems.push(`${who}: request failed: ${u} ${r.failure().errorText}`);
	});
	page.on('request', r => {
		if (!origins.includes(new URL(r.url()).origin) && !r.url().startsWith('data:'))
			problems.push(`${who}: a request outside the daemon: ${r.url()}`);
	});
	return page;
}

// Go to a view of the console by its fragment (no reload).
async function view(page, hash) {
	await page.evaluate(h => {
		delete document.getElementById('main').dataset.rendered;
		delete document.getElementById('main').dataset.loaded;
		if (location.hash === h)
			window.dispatchEvent(new HashChangeEvent('hashchange'));
		else
			location.hash = h;
	}, hash);
}

function waitIn(page, fn, ...args) {
	return page.waitForFunction(fn, {timeout: WAIT, polling: 100}, ...args);
}

async function signIn(page, tok, principal) {
	await page.goto(`${base}/ui/#/settings`);
	await page.waitForSelector('#token');
	await page.type('#token', tok);
	await page.click('#use-token');
	await waitIn(page, p => document.getElementById('who').textContent.startsWith(p), principal);
}

async function text(page) {
	return page.evaluate(() => document.body.innerText);
}

// Press the confirmation's button (after the dialog opened).
async function confirmDialog(page) {
	await page.waitForSelector('dialog#confirm[open]');
	await page.click('#confirm-ok');
	await page.waitForSelector('dialog#confirm:not([open])');
}

async function shot(page, file, fullPage) {
	if (!SHOTS)
		return;
	await page.evaluate(() => document.activeElement && document.activeElement.blur());
	await sleep(400);	/* the picture's chips end their slide */
	await page.screenshot({path: path.join(SHOTS, file), fullPage: !!fullPage});
	log(`screenshot ${file}`);
}

// The contrast of each visible text with what is behind it (WCAG 2).
async function contrasts(page) {
	return page.evaluate(() => {
		const lum = c => {
			const m = /rgba?\(([\d.]+), ([\d.]+), ([\d.]+)(?:, ([\d.]+))?\)/.exec(c);
			if (!m)
				return null;
			const [r, g, b] = [m[1], m[2], m[3]].map(v => {
				v /= 255;
				return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
			});
			return {l: 0.2126 * r + 0.7152 * g + 0.0722 * b, a: m[4] === undefined ? 1 : Number(m[4])};
		};
		const bg = el => {
			for (; el; el = el.parentElement) {
				const c = lum(getComputedStyle(el).backgroundColor);
				if (c && c.a > 0.5)
					return c.l;
			}
			return lum(getComputedStyle(document.documentElement).backgroundColor)?.l ?? 1;
		};
		const worst = [];
		const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
		for (let t = walker.nextNode(); t; t = walker.nextNode()) {
			const el = t.parentElement;
			if (!t.textContent.trim() || !el.offsetParent || el.closest('svg, dialog:not([open])'))
				continue;
			const st = getComputedStyle(el);
			if (st.opacity !== '1' && Number(st.opacity) < 0.9)
				continue;
			const f = lum(st.color).l, b = bg(el);
			const ratio = (Math.max(f, b) + 0.05) / (Math.min(f, b) + 0.05);
			worst.push({ratio, text: t.textContent.trim().slice(0, 30), tag: el.tagName});
		}
		worst.sort((a, b) => a.ratio - b.ratio);
		return worst.slice(0, 3);
	});
}

// Does the page fit its width (nothing but the tables' own scroll areas)?
async function fits(page) {
	return page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1);
}

// --- the test -------------------------------------------------------------

async function main() {
	const watchdog = setTimeout(() => {
		console.log('not ok - the watchdog ended the test (240 s)');
		cleanup(1);
	}, 240000);
	base = await startSemd(0);
	const port = new URL(base).port;
	log(`semd at ${base}, files in ${T}`);
	const dir = fs.mkdtempSync(path.join(T, 'chromium-'));
	browser = await puppeteer.launch({executablePath: CHROMIUM, headless: true, userDataDir: dir,
		args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
			'--disable-component-update', '--disable-sync', '--no-first-run',
			'--disable-quic', '--disable-default-apps', '--disable-extensions']});
	log(`browser ${await browser.version()}`);
	const alice = await newPage(browser.defaultBrowserContext(), 'alice');

	await step('the console is served, with its policy', async () => {
		const r = await fetch(`${base}/ui/`);
		check(r.status === 200 && /text\/html/.test(r.headers.get('content-type')), '/ui/ is the page');
		const csp = r.headers.get('content-security-policy') || '';
		check(/script-src 'self'/.test(csp) && !/unsafe/.test(csp) && /frame-ancestors 'none'/.test(csp),
			'a strict Content-Security-Policy', csp);
		check(r.headers.get('x-content-type-options') === 'nosniff', 'nosniff');
		const etag = r.headers.get('etag');
		const again = await fetch(`${base}/ui/`, {headers: {'If-None-Match': etag}});
		check(etag && again.status === 304, 'revalidated by its ETag', `${etag} ${again.status}`);
		const js = await fetch(`${base}/ui/js/app.js`);
		check(/^text\/javascript/.test(js.headers.get('content-type')), 'a module has a script type');
		for (const bad of ['/ui/../v1/server', '/ui/js/../index.html', '/ui/%2e%2e/semd.conf',
			'/ui/js//app.js', '/ui/nothing.html', '/ui/.git/config'])
			check(await rawStatus(bad) === 404, `${bad}: 404`);
		check((await fetch(`${base}/ui/`, {method: 'POST'})).status === 405, 'POST: 405');
		const two = await raw('HEAD /ui/ HTTP/1.1\r\nHost: x\r\n\r\nGET /ui/icon.svg HTTP/1.1\r\nHost: x\r\n\r\n',
			d => d.endsWith('</svg>\n'));
		check(/^HTTP\/1\.1 200[^]*?Content-Length: \d+\r\n[^]*?\r\n\r\nHTTP\/1\.1 200 /.test(two),
			'HEAD: the headers and length, no body', two.slice(0, 300));
		const red = await fetch(`${base}/ui`, {redirect: 'manual'});
		check(red.status === 301 && red.headers.get('location') === '/ui/', '/ui goes to /ui/');
	});

	await step('sign in with a token', async () => {
		await signIn(alice, tokens.alice, 'cn:alice');
		check(/\(admin\)/.test(await alice.$eval('#who', e => e.textContent)), 'alice is an administrator');
	});

	await step('a name created with semctl appears', async () => {
		await view(alice, '#/');
		await alice.waitForSelector('main[data-rendered]');
		await must('create', 'ops/deploy', '--limit', '1');
		await alice.waitForSelector('tr[data-name="ops/deploy"]', {timeout: WAIT});
		check(true, 'ops/deploy appeared without a reload');
		await waitIn(alice, () => document.querySelector('#live').dataset.state === 'live');
		check(true, 'the page says it is live');
	});

	let tok1 = '';
	await step('a semctl down shows as a holder with its token', async () => {
		await view(alice, `#/name/${encodeURIComponent('ops/deploy')}`);
		await alice.waitForSelector('main[data-loaded]');
		tok1 = await must('down', 'ops/deploy', '--lease', '5m');
		check(/^\d+$/.test(tok1), 'semctl down printed a token', tok1);
		await waitIn(alice, t => [...document.querySelectorAll('#holders [data-col="token"]')]
			.some(td => td.textContent === t), tok1);
		check(true, 'the holder is shown with its token');
		const row = await alice.$eval('#holders tbody tr', tr => tr.innerText);
		check(/uid:0/.test(row) && /semctl/.test(row), 'with its principal and client', row);
	});

	await step('a waiter appears in the queue and moves to the holders on up', async () => {
		const w = start(SEMCTL, ['down', 'ops/deploy', '--timeout', '60s', '--lease', '5m']);
		await waitIn(alice, pid => [...document.querySelectorAll('#queue tbody tr')]
			.some(tr => tr.innerText.includes(String(pid))), w.pid);
		check(true, 'the waiter is in the queue, with its pid');
		check(await alice.$$eval('#picture .chip.waiting', l => l.length) === 1, 'and in the picture');
		await must('up', 'ops/deploy');
		const r = await w.done;
		const tok2 = r.out.trim();
		check(r.code === 0 && /^\d+$/.test(tok2), 'the waiter was granted',
			`exit ${r.code}${r.signal ? ` (${r.signal})` : ''}: ${r.out}`);
		await waitIn(alice, t => !document.querySelector('#queue tbody tr') &&
			[...document.querySelectorAll('#holders [data-col="token"]')].some(td => td.textContent === t), tok2);
		check(true, 'it moved from the queue to the holders');
		await waitIn(alice, () => /\b2 waits seen/.test(document.getElementById('charts').innerText));
		check(true, 'both waits (the first granted at once) are in the name\'s histogram');
		await waitIn(alice, () => /\b2 waits counted/.test(document.getElementById('charts').innerText));
		check(true, '... and in the daemon\'s histogram of the name');
	});

	let waiters = [];
	await step('screenshots of a busy state', async () => {
		await view(alice, '#/');
		await alice.waitForSelector('main[data-rendered]');
		await must('create', 'jobs/ci', '--limit', '4');
		await must('down', 'jobs/ci', '-n', '2', '--lease', '30m');
		await must('down', 'jobs/ci', '--lease', '10m');
		await must('create', 'db/replica', '--limit', '3');
		for (let i = 0; i < 3; i++)
			await must('down', 'db/replica', '--lease', '1h');
		await must('set-limit', 'db/replica', '1');
		await must('create', 'api/calls', '--rate', '100/s');
		for (let i = 0; i < 5; i++)
			await must('down', 'api/calls');
		await must('create', 'scratch/old', '--limit', '1');
		waiters = [0, 1, 2].map(i => start(SEMCTL, ['down', 'ops/deploy', '--timeout', '120s',
			'--lease', '5m', ...(i === 1 ? ['--priority', '3'] : [])]));
		await waitIn(alice, () => /over by 2/.test(document.querySelector('tr[data-name="db/replica"]')?.innerText || '') &&
			/3/.test(document.querySelector('tr[data-name="ops/deploy"] [data-col="waiting"]')?.innerText || ''));
		check(true, 'a name over its limit is marked, and the waiters counted, live');
		await shot(alice, 'console-list.png');
		await view(alice, `#/name/${encodeURIComponent('ops/deploy')}`);
		await waitIn(alice, () => document.querySelectorAll('#queue tbody tr').length === 3);
		check(true, 'three waiters queued');
		await shot(alice, 'console-name.png', true);
		await view(alice, '#/holds?principal=uid%3A0');
		await alice.waitForSelector('#holds table');
		check(await alice.$$eval('#holds tbody tr', l => l.length) >= 5, 'the holds of uid:0');
		await shot(alice, 'console-holds.png');
		await view(alice, '#/sessions');
		await waitIn(alice, () => [...document.querySelectorAll('#sessions tbody tr')].filter(tr =>
			tr.querySelector('[data-col="principal"]').innerText === 'uid:0' &&
			tr.querySelector('[data-col="waiters"]').innerText === '1').length === 3);
		check(true, 'the sessions: the three waiting semctl downs, each waiting once');
	});

	await step('cancel a waiter from the page', async () => {
		await view(alice, `#/name/${encodeURIComponent('ops/deploy')}`);
		await waitIn(alice, () => document.querySelectorAll('#queue tbody tr').length === 3);
		const last = waiters[2];
		const rows = await alice.$$('#queue tbody tr');
		let button = null;
		for (const tr of rows)
			if ((await tr.evaluate(e => e.innerText)).includes(String(last.pid)))
				button = await tr.$('button');
		if (!button)
			throw new Error(`no queue row with pid ${last.pid}`);
		await button.click();
		await confirmDialog(alice);
		const r = await Promise.race([last.done, sleep(WAIT).then(() => ({code: 'none'}))]);
		check(r.code === 6 && /cancel/i.test(r.out), 'the waiter was answered cancelled', `${r.code} ${r.out}`);
		await waitIn(alice, () => document.querySelectorAll('#queue tbody tr').length === 2);
		check(true, 'the queue shows two');
	});

	await step('set a limit and delete a name from the page', async () => {
		await view(alice, `#/name/${encodeURIComponent('jobs/ci')}`);
		await alice.waitForSelector('main[data-loaded]');
		await alice.type('#new-limit', '2');
		await alice.click('#set-limit');
		await confirmDialog(alice);
		check(/^limit:\s+2\b/m.test(await must('info', 'jobs/ci')) ||
			/"limit":2\b/.test(await must('--json', 'info', 'jobs/ci')), 'the limit is 2');
		await waitIn(alice, () => document.querySelector('[data-fact="over"]'));
		check(true, 'the page shows it over its limit');
		await view(alice, `#/name/${encodeURIComponent('scratch/old')}`);
		await alice.waitForSelector('main[data-loaded]');
		await alice.click('#delete');
		await confirmDialog(alice);
		const r = await semctl('info', 'scratch/old');
		check(r.code !== 0, 'scratch/old is gone', r.out);
		await waitIn(alice, () => /does not exist|was deleted/.test(document.getElementById('name-state').textContent));
		check(true, 'the page says so');
	});

	await step('a force-release from the page reaches the holder (keyboard only)', async () => {
		await must('create', 'ops/build', '--limit', '2');
		await view(alice, `#/name/${encodeURIComponent('ops/build')}`);
		await alice.waitForSelector('main[data-loaded]');
		const run = start(SEMCTL, ['run', 'ops/build', '--', 'sleep', '60']);
		await waitIn(alice, () => document.querySelector('#holders tbody tr button'));
		await alice.focus('#holders tbody tr button');
		await alice.keyboard.press('Enter');
		await alice.waitForSelector('dialog#confirm[open]');
		check(await alice.evaluate(() => document.activeElement.id) === 'confirm-cancel',
			'the dialog opens on Cancel');
		await alice.keyboard.press('Tab');
		check(await alice.evaluate(() => document.activeElement.id) === 'confirm-ok', 'Tab reaches the action');
		await alice.keyboard.press('Enter');
		const r = await Promise.race([run.done, sleep(WAIT).then(() => ({code: 'none'}))]);
		check(r.code === 5, 'semctl run exits 5 (hold lost)', `${r.code} ${r.out}`);
		await waitIn(alice, () => !document.querySelector('#holders tbody tr'));
		check(true, 'the holder is gone from the page');
	});

	await step('a principal without the inspect right sees nothing of another\'s names', async () => {
		const ctx = await browser.createBrowserContext();
		const bob = await newPage(ctx, 'bob');
		await signIn(bob, tokens.bob, 'cn:bob');
		await view(bob, '#/');
		await bob.waitForSelector('main[data-rendered]');
		await must('create', 'ops/secret', '--limit', '1');
		await must('create', 'bob/mine', '--limit', '1');
		await bob.waitForSelector('tr[data-name="bob/mine"]', {timeout: WAIT});
		check(true, 'bob sees a name he may inspect appear');
		const t = await text(bob);
		check(!/ops\//.test(t), 'and no name under ops/, listed or streamed', t);
		await view(bob, `#/name/${encodeURIComponent('ops/deploy')}`);
		await waitIn(bob, () => document.getElementById('main').dataset.loaded === 'error');
		const t2 = await text(bob);
		check(!t2.includes(tok1) && !/uid:0/.test(t2) && !(await bob.$('#holders table')),
			'nor its holders on the name\'s page', t2);
		await view(bob, '#/holds?principal=uid%3A0');
		await waitIn(bob, () => /holds\.|Not shown|Could not/.test(document.getElementById('main').innerText));
		check(!/ops\//.test(await text(bob)), 'nor in the holds of its holder');
		await ctx.close();
	});

	await step('200% zoom and contrast', async () => {
		for (const scheme of ['light', 'dark']) {
			await alice.emulateMediaFeatures([{name: 'prefers-color-scheme', value: scheme}]);
			const c = await contrasts(alice);
			check(c.length && c[0].ratio >= 4.5, `${scheme}: every text at least 4.5:1`,
				JSON.stringify(c));
		}
		await alice.emulateMediaFeatures([{name: 'prefers-color-scheme', value: 'light'}]);
		await alice.setViewport({width: 640, height: 860, deviceScaleFactor: 2});
		for (const hash of ['#/', `#/name/${encodeURIComponent('ops/deploy')}`]) {
			await view(alice, hash);
			await alice.waitForSelector('main[data-rendered], main[data-loaded]');
			check(await fits(alice), `${hash} fits at 200%`);
		}
		await shot(alice, 'console-zoom.png');
		await alice.setViewport({width: 1280, height: 860, deviceScaleFactor: 1});
	});

	await step('the daemon\'s counts, sessions among them', async () => {
		await view(alice, '#/cluster');
		await alice.waitForSelector('#counters');
		const t = await alice.$eval('#counters', e => e.innerText);
		check(/sessions\s+\d/.test(t) && /connections\s+\d/.test(t), 'sessions and connections counted', t);
	});

	let anon;
	await step('without a token: EventSource', async () => {
		const ctx = await browser.createBrowserContext();
		anon = await newPage(ctx, 'anonymous');
		await anon.goto(`${base}/ui/#/`);
		await anon.waitForSelector('main[data-rendered]');
		check(/^anonymous/.test(await anon.$eval('#who', e => e.textContent)), 'anonymous');
		await must('create', 'anon/seen', '--limit', '1');
		await anon.waitForSelector('tr[data-name="anon/seen"]', {timeout: WAIT});
		check(true, 'a name created appears through EventSource');
		await view(alice, '#/');
		await alice.waitForSelector('tr[data-name="anon/seen"]');
	});

	await step('across a daemon restart', async () => {
		await stopSemd();
		for (const w of waiters)
			w.kill('SIGTERM');
		await waitIn(alice, () => document.querySelector('#live').dataset.state !== 'live');
		check(true, 'the page says it is not live');
		await startSemd(port);
		await must('create', 'after/restart', '--limit', '1');
		for (const [who, page] of [['alice (fetch)', alice], ['anonymous (EventSource)', anon]]) {
			await page.waitForSelector('tr[data-name="after/restart"]', {timeout: 3 * WAIT});
			check(true, `${who}: a name created after the restart appears`);
			if (!DURABLE) {
				await waitIn(page, () => !document.querySelector('tr[data-name="ops/deploy"]'));
				check(true, `${who}: the names of before are gone (the state began again)`);
			}
			await waitIn(page, () => document.querySelector('#live').dataset.state === 'live');
		}
		check(await alice.evaluate(() => performance.getEntriesByType('navigation').length) === 1,
			'no reload');
	});

	await step('1,000 names and 10,000 waiters', async () => {
		/* the pages watch nothing while the state is made */
		await view(anon, '#/settings');
		await alice.goto('about:blank');
		const addr = `unix:${T}/semd.sock`;
		const env = {FLOOD_READ_MS: '20'};
		for (const tmpl of ['create load/%d 1', 'down load/%d lease=3600000']) {
			const r = await start(PROBE, ['--flood', addr, '1', '1000', '0', tmpl], {env}).done;
			if (r.code !== 0)
				throw new Error(`${tmpl}: ${r.out}`);
		}
		const flood = [];
		for (let i = 0; i < 10; i++)
			flood.push(start(PROBE, ['--flood', addr, '1', '1000', '120000', 'down load/%d timeout=-1'], {env}));
		let last = '';
		await until('10,000 waiters', async () => {
			const r = await semctl('--json', 'info', 'load/999');
			last = r.out.slice(0, 300);
			return /"waiters_total":\s*10\b/.test(r.out);
		}, 3 * WAIT).catch(e => {
			throw new Error(`${e.message}; info load/999: ${last}; ` +
				flood.map(p => p.output().slice(-200)).join(' | '));
		});
		for (let i = 0; i < 3; i++) {
			await alice.goto('about:blank');
			const a = Date.now();
			await alice.goto(`${base}/ui/#/names?prefix=load%2F`);
			await alice.waitForSelector('main[data-rendered="1000"]', {timeout: 3 * WAIT});
			const ms = Date.now() - a;
			const m = await alice.evaluate(() => Object.fromEntries(performance.getEntriesByType('mark')
				.map(x => [x.name, Math.round(x.startTime)])));
			log(`load ${i + 1}: the list of 1,000 names (10,000 waiting) drawn ${m['list-drawn']} ms after ` +
				`the navigation began (modules ${m['app-start']}, stream ready ${m['stream-ready']}, ` +
				`list read ${m['list-read-start']}..${m['list-read']}); ${ms} ms as puppeteer saw it`);
		}
		const t = await alice.$eval('#totals', e => e.textContent);
		check(/1,000 names/.test(t) && /10,000 waiting/.test(t), 'the totals', t);
		await view(alice, `#/name/${encodeURIComponent('load/7')}`);
		await alice.waitForSelector('main[data-loaded]');
		check(await alice.$$eval('#queue tbody tr', l => l.length) === 10, 'load/7 has 10 in its queue');
		for (const p of flood)
			p.kill('SIGTERM');
	});

	await step('a cluster: the console of a follower, across a leader change and the leader\'s death', async () => {
		const P = await freeBlock(6);
		const peer = i => P + i - 1, web = i => P + 2 + i;
		const boot = [1, 2, 3].map(i => `${i}=127.0.0.1:${peer(i)}`).join(',');
		const S = [1, 2, 3].map(i => `unix:${T}/c${i}.sock`).join(',');
		const nodes = {};
		fs.writeFileSync(`${T}/peer.key`, 'a peer key for the console test', {mode: 0o600});
		const startNode = async i => {
			fs.writeFileSync(`${T}/c${i}.conf`, [`listen unix:${T}/c${i}.sock`,
				`listen http:127.0.0.1:${web(i)}`, 'admin cn:alice',
				`http-token cn:alice sha256:${sha(tokens.alice)}`,
				`http-nodes ${[1, 2, 3].map(j => `${j}=http://127.0.0.1:${web(j)}`).join(',')}`,
				...[1, 2, 3].map(j => `http-cors-origin http://127.0.0.1:${web(j)}`), ''].join('\n'));
			fs.rmSync(`${T}/r${i}`, {force: true});
			nodes[i] = start(SEMD, ['--config', `${T}/c${i}.conf`, '--data-dir', `${T}/d${i}`,
				'--node-id', String(i), '--peer-listen', `tcp:127.0.0.1:${peer(i)}`, '--bootstrap', boot,
				'--peer-key', `${T}/peer.key`,
				'--election-timeout', '1s', '--ready-file', `${T}/r${i}`]);
			await until(`node ${i} ready`, () => fs.existsSync(`${T}/r${i}`) &&
				fs.readFileSync(`${T}/r${i}`, 'utf8').includes('http:'));
		};
		const leader = async () => {
			const r = await semctl('-s', S, '--json', 'cluster', 'status');
			const m = /"leader_id":(\d+)/.exec(r.out);
			return m ? Number(m[1]) : 0;
		};
		try {
			for (const i of [1, 2, 3])
				await startNode(i);
			let L = 0;
			await until('a leader', async () => (L = await leader()) !== 0, 3 * WAIT);
			const F = [1, 2, 3].find(i => i !== L), O = [1, 2, 3].find(i => i !== L && i !== F);
			base = `http://127.0.0.1:${web(F)}`;
			const page = await newPage(await browser.createBrowserContext(), 'cluster',
				[1, 2, 3].map(i => `http://127.0.0.1:${web(i)}`));
			await signIn(page, tokens.alice, 'cn:alice');
			await view(page, '#/');
			await page.waitForSelector('main[data-rendered]');
			check((await page.$eval('#who', e => e.textContent)).includes(`leader ${L}`),
				`the console of follower ${F} reads from leader ${L}`);
			await must('-s', S, 'create', 'c/one', '--limit', '1');
			await page.waitForSelector('tr[data-name="c/one"]', {timeout: WAIT});
			check(true, 'a name created appears on the follower\'s console');
			await must('-s', S, 'cluster', 'transfer', String(O));
			await until(`leader ${O}`, async () => await leader() === O, 3 * WAIT);
			await must('-s', S, 'create', 'c/two', '--limit', '1');
			await page.waitForSelector('tr[data-name="c/two"]', {timeout: 2 * WAIT});
			check(true, `after the leadership moved to ${O}, a name created appears`);
			nodes[O].kill('SIGKILL');
			let L2 = 0;
			await until('a new leader', async () => (L2 = await leader()) !== 0 && L2 !== O, 3 * WAIT);
			await must('-s', S, 'create', 'c/three', '--limit', '1');
			await page.waitForSelector('tr[data-name="c/three"]', {timeout: 2 * WAIT});
			check(true, `after leader ${O} was killed (node ${L2} leads), a name created appears`);
			check(await page.evaluate(() => performance.getEntriesByType('navigation').length) === 1 &&
				await page.$$eval('tr[data-name^="c/"]', l => l.length) === 3, 'no reload, nothing lost');
			await view(page, '#/cluster');
			await page.waitForSelector('#cluster table');
			const t = await page.$eval('#cluster', e => e.innerText);
			check(new RegExp(`Leader\\s+node ${L2}`).test(t) && (await page.$$('#cluster tbody tr')).length === 3,
				'the cluster view: three members, the leader', t);
			await shot(page, 'console-cluster.png');
		} finally {
			for (const p of Object.values(nodes))
				p.kill('SIGKILL');
		}
	});

	await step('the pages broke no rule', async () => {
		const csp = problems.filter(p => /Content Security Policy|Trusted Type/i.test(p));
		check(csp.length === 0, 'no Content-Security-Policy violation', csp.join('\n'));
		const other = problems.filter(p => !csp.includes(p) &&
			!/ERR_CONNECTION_REFUSED|Failed to load resource|net::ERR/.test(p));
		check(other.length === 0, 'no error in the pages', other.join('\n'));
	});
	clearTimeout(watchdog);
}

async function cleanup(code) {
	for (const p of children)
		p.kill('SIGKILL');
	if (browser)
		await browser.close().catch(() => {});
	if (code !== 0 || failed) {
		try {
			console.log('# semd.log (last 60 lines):');
			for (const l of fs.readFileSync(`${T}/semd.log`, 'utf8').split('\n').slice(-60))
				console.log(`# ${l}`);
		} catch {
			/* none */
		}
	}
	if (!failed && code === 0)
		fs.rmSync(T, {recursive: true, force: true});
	console.log(`# ${((Date.now() - t0) / 1000).toFixed(1)} s`);
	console.log(`${passed} passed, ${failed} failed`);
	process.exit(code || (failed ? 1 : 0));
}

main().then(() => cleanup(0), e => {
	console.log(`not ok - ${e.stack || e}`);
	failed++;
	cleanup(1);
});
