/**
 * The checklist endpoints on a real server, both databases: GET /ai/checklist/{discipline},
 * POST /ai/match-checklist, POST /ai/suggestions, with every error code they answer.
 */
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { forEachBackend } from '../../../helpers/backends.ts';
import { registerUser, startTestServer, type TestServer } from '../../../helpers/test-server.ts';

const TRANSCRIPT =
  'Patient reports knee pain 3/10. Ambulated 150 feet with rolling walker and CGA. Gait training 20 minutes. ' +
  'BP 128/76, heart rate 72. Plan is to continue POC 2x week.';

forEachBackend('AI checklists', (backend) => {
  let server: TestServer;
  let token: string;
  before(async () => {
    server = await startTestServer(backend);
    token = (await registerUser(server)).token;
  });
  after(() => server.close());

  test('GET /ai/checklist/{discipline}: items per discipline, codes case-insensitive, assistants share', async () => {
    const pt = await server.api('GET', '/ai/checklist/PT', { token });
    assert.equal(pt.status, 200);
    assert.equal(pt.body.status, true);
    const ids = pt.body.data.map((i: { id: string }) => i.id);
    for (const id of ['homebound_status', 'skilled_need', 'interventions_minutes', 'response_to_treatment', 'progress_toward_goals', 'safety', 'plan_frequency', 'vital_signs', 'medication_review', 'education']) {
      assert.ok(ids.includes(id), `PT has ${id}`);
    }
    for (const item of pt.body.data) {
      assert.deepEqual(Object.keys(item).sort(), ['id', 'label', 'prompt']);
      assert.ok(item.label.length > 0 && item.prompt.length > 0);
    }
    assert.equal(new Set(ids).size, ids.length, 'ids are unique');
    const pta = await server.api('GET', '/ai/checklist/pta', { token });
    assert.deepEqual(pta.body.data, pt.body.data);
    const cota = await server.api('GET', '/ai/checklist/Cota', { token });
    const ot = await server.api('GET', '/ai/checklist/OT', { token });
    assert.deepEqual(cota.body.data, ot.body.data);
    assert.ok(ot.body.data.some((i: { id: string }) => i.id === 'adl_performance'));
    const slp = await server.api('GET', '/ai/checklist/slp', { token });
    assert.ok(slp.body.data.some((i: { id: string }) => i.id === 'swallow_diet'));
    const rn = await server.api('GET', '/ai/checklist/RN', { token });
    assert.ok(rn.body.data.some((i: { id: string }) => i.id === 'skin_wound'));
  });

  test('GET /ai/checklist: 404 for an unknown discipline, 401 without a token', async () => {
    const res = await server.api('GET', '/ai/checklist/DENTIST', { token });
    assert.equal(res.status, 404);
    assert.equal(res.body.status, false);
    assert.equal(res.body.code, 'discipline_not_found');
    const anon = await server.api('GET', '/ai/checklist/PT');
    assert.equal(anon.status, 401);
  });

  test('POST /ai/match-checklist: matched items carry the transcript span that shows them', async () => {
    const res = await server.api('POST', '/ai/match-checklist', { token, body: { transcript: TRANSCRIPT, discipline: 'pt' } });
    assert.equal(res.status, 200);
    const items = res.body.data.matched_items as Record<string, { matched: boolean; evidence: { char_start: number; char_end: number; text: string } | null }>;
    assert.equal(res.body.data.discipline, 'PT');
    for (const id of ['vital_signs', 'interventions_minutes', 'plan_frequency', 'pain', 'functional_mobility']) {
      const m = items[id]!;
      assert.equal(m.matched, true, id);
      assert.equal(TRANSCRIPT.slice(m.evidence!.char_start, m.evidence!.char_end), m.evidence!.text, `${id} evidence is the transcript's text`);
    }
    assert.match(items.vital_signs!.evidence!.text, /BP 128\/76/);
    assert.match(items.interventions_minutes!.evidence!.text, /20 minutes/);
    for (const id of ['homebound_status', 'medication_review', 'education']) {
      assert.deepEqual(items[id], { matched: false, evidence: null }, id);
    }
  });

  test('POST /ai/suggestions: prompts for unmatched items, skipping checked ones', async () => {
    const all = await server.api('POST', '/ai/suggestions', { token, body: { transcript: TRANSCRIPT, discipline: 'PT', checked_items: [] } });
    assert.equal(all.status, 200);
    const list = await server.api('GET', '/ai/checklist/PT', { token });
    const prompt = (id: string) => list.body.data.find((i: { id: string }) => i.id === id).prompt as string;
    assert.ok(all.body.data.suggestions.includes(prompt('homebound_status')));
    assert.ok(all.body.data.suggestions.includes(prompt('medication_review')));
    assert.ok(!all.body.data.suggestions.includes(prompt('vital_signs')), 'a covered item is not suggested');
    const some = await server.api('POST', '/ai/suggestions', { token, body: { transcript: TRANSCRIPT, discipline: 'PT', checked_items: ['homebound_status'] } });
    assert.ok(!some.body.data.suggestions.includes(prompt('homebound_status')));
    assert.equal(some.body.data.suggestions.length, all.body.data.suggestions.length - 1);
  });

  test('422 naming the field for bad input (never echoing the transcript), 401 without a token', async () => {
    const cases: Array<[string, unknown, string]> = [
      ['/ai/match-checklist', { discipline: 'PT' }, 'transcript'],
      ['/ai/match-checklist', { transcript: '   ', discipline: 'PT' }, 'transcript'],
      ['/ai/match-checklist', { transcript: 'Secret Smith walked.', discipline: 'XYZ' }, 'discipline'],
      ['/ai/match-checklist', { transcript: 'Secret Smith walked.' }, 'discipline'],
      ['/ai/suggestions', { transcript: 'Secret Smith walked.', discipline: 'PT' }, 'checked_items'],
      ['/ai/suggestions', { transcript: 'Secret Smith walked.', discipline: 'PT', checked_items: 'homebound_status' }, 'checked_items'],
      ['/ai/suggestions', { transcript: 'Secret Smith walked.', discipline: 'nope', checked_items: [] }, 'discipline'],
      ['/ai/suggestions', { transcript: 42, discipline: 'PT', checked_items: [] }, 'transcript'],
    ];
    for (const [path, body, field] of cases) {
      const res = await server.api('POST', path, { token, body });
      assert.equal(res.status, 422, `${path} ${JSON.stringify(body)}`);
      assert.equal(res.body.status, false);
      assert.ok(res.body.errors?.[field], `${path}: errors names ${field}: ${JSON.stringify(res.body.errors)}`);
      assert.ok(!JSON.stringify(res.body).includes('Secret Smith'), 'no transcript text in the error');
    }
    for (const path of ['/ai/match-checklist', '/ai/suggestions']) {
      const anon = await server.api('POST', path, { body: { transcript: TRANSCRIPT, discipline: 'PT', checked_items: [] } });
      assert.equal(anon.status, 401);
    }
  });
});
