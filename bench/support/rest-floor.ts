/**
 * The raw floor of bench/rest-floor.ts: a bare Fastify server answering the five hot
 * endpoints with the least honest work for the same answer on the same database — the ES256
 * token verified with jose, the live session and the rows read in one prepared statement (the
 * PHI-read audit row written by the same statement), PHI opened with node:crypto (the key
 * ring's AES-GCM), the body validated with the route's zod schema, the reply JSON.stringify'd.
 * Writes encrypt first and insert in one statement (patient) or one short transaction that
 * locks the visit (timer events). No framework layers, no logging, no response schema.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { AddressInfo } from 'node:net';
import type { EmbeddedPglite } from '../../server/src/db/database.ts';
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify';
import { importJWK, jwtVerify, type JWK } from 'jose';
import type postgres from 'postgres';
import { patientCreateBody, subscriptionStatusOf, timerEventsBody } from '@fieldchart/schema/api';
import { applyTimerEvents, deriveEvv, TIMER_SEQUENCE, type TimerEventType, type TimerFact } from '@fieldchart/schema/rules';
import { createPhiKeyring, parseKeyFile } from '../../server/src/security/phi-keyring.ts';

/** One statement on either database: postgres.js named statements, or PGlite's query. */
export interface FloorSql {
  one<T>(text: string, params: unknown[]): Promise<T | undefined>;
  /** Runs `fn` in a transaction; `q` runs a statement in it. */
  tx<R>(fn: (q: <T>(text: string, params: unknown[]) => Promise<T | undefined>) => Promise<R>): Promise<R>;
}

export function floorSqlOf(db: { sql: postgres.Sql | null; pglite: EmbeddedPglite | null }): FloorSql {
  if (db.sql) {
    const sql = db.sql;
    return {
      one: async <T>(text: string, params: unknown[]) => (await sql.unsafe(text, params as never[], { prepare: true }))[0] as T | undefined,
      tx: (fn) =>
        sql.begin((t) => fn(async <T>(text: string, params: unknown[]) => (await t.unsafe(text, params as never[], { prepare: true }))[0] as T | undefined)) as never,
    };
  }
  const pg = db.pglite as EmbeddedPglite;
  return {
    one: async <T>(text: string, params: unknown[]) => (await pg.query<T>(text, params)).rows[0],
    tx: (fn) => pg.transaction((t) => fn(async <T>(text: string, params: unknown[]) => (await t.query<T>(text, params)).rows[0])),
  };
}

// The live session, its enabled user and their seat: every statement starts from here.
const ME = `me as (
  select u.id, m.organization_id from sessions s join users u on u.id = s.user_id
  left join organization_members m on m.user_id = u.id
  where s.id = $1 and s.user_id = $2 and s.revoked_at is null and u.disabled_at is null)`;

const PROFILE = `select json_build_object(
  'uuid', u.id, 'first_name', u.first_name, 'last_name', u.last_name, 'email', u.email, 'phone', u.phone, 'address', u.address,
  'discipline', u.discipline, 'license_number', u.license_number, 'license_state', u.license_state, 'needs_onboarding', u.needs_onboarding,
  'trial_ends_at', u.trial_ends_at, 'email_verified', u.email_verified_at is not null, 'has_password', u.password_hash is not null,
  'created_at', u.created_at, 'seated', m.user_id is not null,
  'purchase', (select max(p.expires_at) from store_purchases p where p.user_id = u.id and p.revoked_at is null),
  'providers', coalesce((select json_agg(distinct i.provider) from user_identities i where i.user_id = u.id), '[]')) as r
from sessions s join users u on u.id = s.user_id left join organization_members m on m.user_id = u.id
where s.id = $1 and s.user_id = $2 and s.revoked_at is null and u.disabled_at is null`;

/** A visit row with its children as JSON (v: the visits row). */
const VISIT_JSON = (withNote: boolean) => `json_build_object('v', to_json(v),
  'pf', pa.first_name_enc, 'pl', pa.last_name_enc,
  'events', (select coalesce(json_agg(json_build_object('id', e.id, 't', e.event_type, 'at', e.event_time, 'lat', e.latitude, 'lng', e.longitude, 'acc', e.accuracy) order by e.event_time), '[]')
             from timer_events e where e.visit_id = v.id and e.deleted_at is null),
  'mileage', (select json_build_object('total', mm.total_miles, 'travel', mm.travel_miles, 'onsite', mm.onsite_miles, 'at', mm.recorded_at)
             from visit_mileage mm where mm.visit_id = v.id and mm.deleted_at is null),
  ${withNote ? `'note', (select to_json(n) from soap_notes n where n.visit_id = v.id and n.deleted_at is null)` : `'has_note', exists (select 1 from soap_notes n where n.visit_id = v.id and n.deleted_at is null)`})`;

const UPCOMING = `with ${ME},
day as (select (now() at time zone coalesce((select time_zone from clinician_settings where user_id = me.id), 'America/New_York'))::date as d from me),
picked as (
  (select 0 as list, row_number() over (order by v.start_time, v.created_at) as ord, v.id from visits v, me, day
    where v.owner_id = me.id and v.deleted_at is null and v.visit_date = day.d and v.status <> 'cancelled' order by v.start_time, v.created_at limit $3)
  union all
  (select 1, row_number() over (order by v.visit_date, v.start_time, v.created_at), v.id from visits v, me, day
    where v.owner_id = me.id and v.deleted_at is null and v.visit_date > day.d and v.status in ('scheduled', 'in_progress')
    order by v.visit_date, v.start_time, v.created_at limit $3)),
audit as (insert into audit_log (at, actor_user_id, organization_id, action, resource_type, outcome, request_id, details)
  select now(), me.id, me.organization_id, 'list', 'visit', 'success', $4::text,
    jsonb_build_object('route', 'upcoming', 'filter', 'all', 'count', (select count(*) from picked)) from me)
select day.d::text as today, (select coalesce(json_agg(json_build_object('list', p.list, 'r', ${VISIT_JSON(false)}) order by p.list, p.ord), '[]')
  from picked p join visits v on v.id = p.id left join patients pa on pa.id = v.patient_id and pa.owner_id = v.owner_id) as rows
from day`;

const DETAILS = `with ${ME},
found as (select v.id from visits v, me where v.id = $3 and v.owner_id = me.id and v.deleted_at is null),
audit as (insert into audit_log (at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details)
  select now(), me.id, me.organization_id, 'read', 'visit', $3::uuid::text, case when exists (select 1 from found) then 'success' else 'not_found' end, $4::text, '{}'::jsonb from me)
select true as live, (select ${VISIT_JSON(true)} from found f join visits v on v.id = f.id left join patients pa on pa.id = v.patient_id and pa.owner_id = v.owner_id) as r
from me`;

const CREATE_PATIENT = `with ${ME},
p as (insert into patients (id, owner_id, organization_id, first_name_enc, last_name_enc, email_enc, phone_enc, address_enc, name_search, created_at, updated_at)
  select $3::uuid, me.id, me.organization_id, $4::text, $5::text, $6::text, $7::text, $8::text, array(select json_array_elements_text($9::text::json)), now(), now() from me returning id),
r as (insert into patient_referrals (id, patient_id, owner_id, organization_id, status, discipline, diagnosis_codes, referral_source, start_of_care, ordered_frequency, created_at, updated_at)
  select $10::uuid, p.id, me.id, me.organization_id, 'open', $11::text, array(select json_array_elements_text($12::text::json)), $13::text, $14::date, $15::text, now(), now() from p, me returning id),
a as (insert into audit_log (at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details)
  select now(), me.id, me.organization_id, 'create', 'patient', $3::uuid::text, 'success', $16::text, $17::text::jsonb from me, r)
select count(*)::int as n from r`;

const LOCK_VISIT = `with ${ME}
select json_build_object('org', me.organization_id, 'status', v.status,
  'events', (select coalesce(json_agg(json_build_object('t', e.event_type, 'at', e.event_time, 'lat', e.latitude, 'lng', e.longitude, 'acc', e.accuracy)), '[]')
             from timer_events e where e.visit_id = v.id and e.deleted_at is null)) as r
from me join visits v on v.owner_id = me.id where v.id = $3 and v.deleted_at is null for update of v`;

const STORE_EVENTS = `with ins as (insert into timer_events (visit_id, owner_id, event_type, event_time, latitude, longitude, accuracy, created_at)
  select $1::uuid, $2::uuid, x.t, x.at::timestamptz, x.lat, x.lng, x.acc, now() from json_to_recordset($3::text::json) as x(t text, at text, lat float8, lng float8, acc float8)
  on conflict do nothing),
upd as (update visits set travel_started_at = $4::timestamptz, arrived_at = $5::timestamptz, arrival_lat = $6::float8, arrival_lng = $7::float8, arrival_accuracy = $8::float8,
  documentation_started_at = $9::timestamptz, departed_at = $10::timestamptz, departure_lat = $11::float8, departure_lng = $12::float8, departure_accuracy = $13::float8,
  drive_seconds = $14::int, onsite_seconds = $15::int, documentation_seconds = $16::int, status = $17::text, updated_at = now() where id = $1::uuid)
insert into audit_log (at, actor_user_id, organization_id, action, resource_type, resource_id, outcome, request_id, details)
  values (now(), $2::uuid, $18::uuid, 'update', 'visit_timer', $1::uuid::text, 'success', $19::text, $20::text::jsonb)`;

type Json = Record<string, unknown>;
const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());
const minutes = (s: unknown) => (s === null || s === undefined ? null : Math.round((s as number) / 60));
const place = (lat: unknown, lng: unknown, acc: unknown) => (lat === null || lng === null ? null : { latitude: lat, longitude: lng, accuracy: acc });

export interface FloorServer {
  readonly url: string;
  close(): Promise<void>;
}

export async function startFloor(opts: { db: FloorSql; dataDir: string; issuer: string; audience: string }): Promise<FloorServer> {
  const { db } = opts;
  const jwks = JSON.parse(fs.readFileSync(path.join(opts.dataDir, 'keys', 'jwt-signing.jwks.json'), 'utf8')) as { keys: Array<JWK & { kid: string }> };
  const keys = new Map<string, CryptoKey | Uint8Array>();
  for (const { d: _d, ...pub } of jwks.keys) keys.set(pub.kid as string, await importJWK(pub, 'ES256'));
  const ring = createPhiKeyring(parseKeyFile(fs.readFileSync(path.join(opts.dataDir, 'keys', 'phi-keys.json'), 'utf8'), 'phi keys'));
  const open = (v: unknown, table: string, column: string, id: string) => (v === null || v === undefined ? null : ring.decrypt(v as string, `${table}.${column}:${id}`));
  const seal = (v: string | null | undefined, table: string, column: string, id: string) => (v === null || v === undefined ? null : ring.encrypt(v, `${table}.${column}:${id}`));

  const unauthorized = (reply: FastifyReply) => reply.code(401).send({ status: false, message: 'Invalid or expired token', code: 'invalid_token' });
  async function claims(req: FastifyRequest): Promise<{ sub: string; sid: string } | null> {
    const m = /^Bearer\s+(\S+)$/i.exec(req.headers.authorization ?? '');
    if (!m?.[1]) return null;
    try {
      const { payload } = await jwtVerify(m[1], async (h) => keys.get(h.kid ?? '') as CryptoKey, {
        algorithms: ['ES256'],
        issuer: opts.issuer,
        audience: opts.audience,
        typ: 'at+jwt',
        requiredClaims: ['sub', 'exp', 'iat', 'jti'],
      });
      return typeof payload.sid === 'string' && typeof payload.sub === 'string' ? { sub: payload.sub, sid: payload.sid } : null;
    } catch {
      return null;
    }
  }

  const rank = (t: string) => TIMER_SEQUENCE.indexOf(t as TimerEventType);
  function visitRecord(x: Json, withNote: boolean) {
    const v = x.v as Json;
    const id = v.id as string;
    const m = x.mileage as Json | null;
    const n = x.note as Json | null | undefined;
    const events = (x.events as Json[]).sort((a, b) => Date.parse(a.at as string) - Date.parse(b.at as string) || rank(a.t as string) - rank(b.t as string));
    return {
      uuid: id,
      patient_uuid: v.patient_id,
      referral_uuid: v.referral_id,
      visit_date: v.visit_date,
      start_time: v.start_time,
      duration_minutes: v.duration_minutes,
      status: v.status,
      visit_type: v.visit_type,
      address: open(v.address_enc, 'visits', 'address_enc', id),
      notes: open(v.notes_enc, 'visits', 'notes_enc', id),
      ai_assisted: v.ai_assisted,
      completed_at: iso(v.completed_at),
      evv: {
        travel_started_at: iso(v.travel_started_at),
        arrived_at: iso(v.arrived_at),
        arrival_location: place(v.arrival_lat, v.arrival_lng, v.arrival_accuracy),
        documentation_started_at: iso(v.documentation_started_at),
        departed_at: iso(v.departed_at),
        departure_location: place(v.departure_lat, v.departure_lng, v.departure_accuracy),
        drive_minutes: minutes(v.drive_seconds),
        onsite_minutes: minutes(v.onsite_seconds),
        documentation_minutes: minutes(v.documentation_seconds),
      },
      created_at: iso(v.created_at),
      updated_at: iso(v.updated_at),
      schedule_uuid: id,
      patient:
        v.patient_id && x.pf
          ? { uuid: v.patient_id, first_name: open(x.pf, 'patients', 'first_name_enc', v.patient_id as string) ?? '', last_name: open(x.pl, 'patients', 'last_name_enc', v.patient_id as string) ?? '' }
          : null,
      has_note: withNote ? Boolean(n) : (x.has_note as boolean),
      timer_events: events.map((e) => ({ uuid: e.id, event_type: e.t, event_time: iso(e.at), latitude: e.lat, longitude: e.lng, accuracy: e.acc })),
      mileage: m ? { total_miles: m.total, travel_miles: m.travel, onsite_miles: m.onsite, recorded_at: iso(m.at) } : null,
      soap_note: withNote && n && v.status === 'completed' ? noteRecord(n) : null,
    };
  }
  function noteRecord(n: Json) {
    const id = n.id as string;
    const o = (c: string) => open(n[c], 'soap_notes', c, id);
    const vitals = o('vital_signs_enc');
    const signature = o('signature_enc');
    return {
      uuid: id,
      subjective: o('subjective_enc') ?? '',
      objective: o('objective_enc') ?? '',
      assessment: o('assessment_enc') ?? '',
      plan: o('plan_enc') ?? '',
      vital_signs: vitals === null ? null : JSON.parse(vitals),
      vital_flags: n.vital_flags,
      signed: signature !== null,
      signed_at: iso(n.signed_at),
      signature: signature === null ? null : `data:${(n.signature_mime as string | null) ?? 'image/png'};base64,${signature}`,
      signature_mime: n.signature_mime,
      review_flags: n.review_flags,
      submitted_at: iso(n.submitted_at),
    };
  }

  const app = Fastify({ logger: false });
  app.get('/my-profile', async (req, reply) => {
    const c = await claims(req);
    if (!c) return unauthorized(reply);
    const row = await db.one<{ r: Json }>(PROFILE, [c.sid, c.sub]);
    if (!row) return unauthorized(reply);
    const u = row.r;
    const purchase = u.purchase ? { expiresAt: new Date(u.purchase as string) } : null;
    const trialEndsAt = u.trial_ends_at ? new Date(u.trial_ends_at as string) : null;
    return {
      status: true,
      data: {
        uuid: u.uuid,
        first_name: u.first_name,
        last_name: u.last_name,
        email: u.email,
        subscription_status: subscriptionStatusOf({ trialEndsAt, purchase, seated: u.seated as boolean, now: new Date() }),
        phone: u.phone,
        address: u.address,
        discipline: u.discipline,
        license_number: u.license_number,
        license_state: u.license_state,
        needs_onboarding: u.needs_onboarding,
        trial_ends_at: iso(u.trial_ends_at),
        email_verified: u.email_verified,
        has_password: u.has_password,
        linked_providers: (u.providers as string[]).sort(),
        created_at: iso(u.created_at),
      },
    };
  });

  app.get('/get-upcomming-visits', async (req, reply) => {
    const c = await claims(req);
    if (!c) return unauthorized(reply);
    const row = await db.one<{ today: string; rows: Array<{ list: number; r: Json }> }>(UPCOMING, [c.sid, c.sub, 50, String(req.id)]);
    if (!row) return unauthorized(reply);
    const today_visit: Array<ReturnType<typeof visitRecord>> = [];
    const upcomming_visit: Array<ReturnType<typeof visitRecord>> = [];
    for (const x of row.rows) (x.list === 0 ? today_visit : upcomming_visit).push(visitRecord(x.r, false));
    return { status: true, data: { today: row.today, today_visit, upcomming_visit } };
  });

  app.get<{ Params: { id: string } }>('/visit-details/:id', async (req, reply) => {
    const c = await claims(req);
    if (!c) return unauthorized(reply);
    const id = /^[0-9a-f-]{36}$/i.test(req.params.id) ? req.params.id : '00000000-0000-0000-0000-000000000000';
    const row = await db.one<{ r: Json | null }>(DETAILS, [c.sid, c.sub, id, String(req.id)]);
    if (!row) return unauthorized(reply);
    if (!row.r) return reply.code(404).send({ status: false, message: 'Visit not found', code: 'visit_not_found' });
    return { status: true, data: visitRecord(row.r, true) };
  });

  app.post('/patient/create', async (req, reply) => {
    const c = await claims(req);
    if (!c) return unauthorized(reply);
    const parsed = patientCreateBody.safeParse(req.body);
    if (!parsed.success) return reply.code(422).send({ status: false, message: 'Invalid input', code: 'validation_failed' });
    const b = parsed.data;
    const id = randomUUID();
    const referralId = randomUUID();
    const r = b.referral ?? {};
    const fields = Object.keys(b).filter((k) => b[k as keyof typeof b] != null);
    const row = await db.one<{ n: number }>(CREATE_PATIENT, [
      c.sid,
      c.sub,
      id,
      seal(b.first_name, 'patients', 'first_name_enc', id),
      seal(b.last_name, 'patients', 'last_name_enc', id),
      seal(b.email, 'patients', 'email_enc', id),
      seal(b.phone, 'patients', 'phone_enc', id),
      seal(b.address, 'patients', 'address_enc', id),
      JSON.stringify(ring.nameTokens(b.first_name, b.last_name)),
      referralId,
      r.discipline ?? null,
      JSON.stringify(r.diagnosis_codes ?? []),
      r.referral_source ?? null,
      r.start_of_care ?? null,
      r.ordered_frequency ?? null,
      String(req.id),
      JSON.stringify({ fields, referral_uuid: referralId }),
    ]);
    if (!row?.n) return unauthorized(reply);
    return { status: true, data: { uuid: id, referral_uuid: referralId }, message: 'Patient created' };
  });

  app.post('/visit-timer-events', async (req, reply) => {
    const c = await claims(req);
    if (!c) return unauthorized(reply);
    const parsed = timerEventsBody.safeParse(req.body);
    if (!parsed.success) return reply.code(422).send({ status: false, message: 'Invalid input', code: 'validation_failed' });
    const body = parsed.data;
    const incoming: TimerFact[] = body.events.map((e) => ({
      eventType: e.event_type as TimerEventType,
      eventTime: new Date(e.event_time),
      latitude: e.latitude,
      longitude: e.longitude,
      accuracy: e.accuracy,
    }));
    const out = await db.tx(async (q) => {
      const row = await q<{ r: { org: string | null; status: string; events: Json[] } }>(LOCK_VISIT, [c.sid, c.sub, body.schedule_uuid]);
      if (!row) return { code: 404 as const };
      const stored = row.r.events.map((e) => ({
        eventType: e.t as TimerEventType,
        eventTime: new Date(e.at as string),
        latitude: e.lat as number | null,
        longitude: e.lng as number | null,
        accuracy: e.acc as number | null,
      }));
      const result = applyTimerEvents(stored, incoming);
      if (!result.ok) return { code: 422 as const };
      if (result.added.length === 0) return { code: 200 as const, recorded: 0, replayed: result.replayed, status: row.r.status };
      const status = row.r.status === 'scheduled' && result.events.some((e) => e.eventType === 'arrive') ? 'in_progress' : row.r.status;
      const d = deriveEvv(result.events);
      await q(STORE_EVENTS, [
        body.schedule_uuid,
        c.sub,
        JSON.stringify(result.added.map((e) => ({ t: e.eventType, at: e.eventTime.toISOString(), lat: e.latitude, lng: e.longitude, acc: e.accuracy }))),
        d.travelStartedAt?.toISOString() ?? null,
        d.arrivedAt?.toISOString() ?? null,
        d.arrivalLat,
        d.arrivalLng,
        d.arrivalAccuracy,
        d.documentationStartedAt?.toISOString() ?? null,
        d.departedAt?.toISOString() ?? null,
        d.departureLat,
        d.departureLng,
        d.departureAccuracy,
        d.driveSeconds,
        d.onsiteSeconds,
        d.documentationSeconds,
        status,
        row.r.org,
        String(req.id),
        JSON.stringify({ added: result.added.length, replayed: result.replayed }),
      ]);
      return { code: 200 as const, recorded: result.added.length, replayed: result.replayed, status };
    });
    if (out.code === 404) return reply.code(404).send({ status: false, message: 'Visit not found', code: 'visit_not_found' });
    if (out.code === 422) return reply.code(422).send({ status: false, message: 'Invalid timer sequence', code: 'invalid_timer_sequence' });
    return { status: true, message: `${out.recorded} event(s) recorded${out.replayed ? `, ${out.replayed} already recorded` : ''}; visit ${out.status}` };
  });

  await app.listen({ host: '127.0.0.1', port: 0 });
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`, close: () => app.close() };
}
