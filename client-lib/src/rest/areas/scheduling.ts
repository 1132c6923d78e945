/** Scheduling: the policy (home base, visit length, buffer, day start), route suggestions and applying them. */
import type * as z from 'zod';
import type { applyBody, optimizeBody, routeSuggestion, schedulingPolicy, schedulingPolicyBody } from '@fieldchart/schema/api';
import { ENDPOINTS as E } from '../endpoints.ts';
import type { Invoker } from '../invoke.ts';
import type { AuthWriteOptions, ReadOptions } from '../options.ts';

/** The clinician's scheduling policy (`SchedulingPolicy` in the OpenAPI document). */
export type SchedulingPolicy = z.output<typeof schedulingPolicy>;
/** Body of `PUT /scheduling/policy`: omitted members keep their value. */
export type SchedulingPolicyBody = z.input<typeof schedulingPolicyBody>;
/** Body of `POST /scheduling/optimize`. */
export type OptimizeBody = z.input<typeof optimizeBody>;
/** `data` of `POST /scheduling/optimize` (`RouteSuggestion`). */
export type RouteSuggestion = z.output<typeof routeSuggestion>;
/** Body of `POST /scheduling/apply`. */
export type ApplyScheduleBody = z.input<typeof applyBody>;

/** `client.scheduling`. */
export interface SchedulingApi {
  /** `GET /scheduling/policy`: defaults until the first change. */
  policy(options?: ReadOptions): Promise<SchedulingPolicy>;
  /** `PUT /scheduling/policy`. */
  updatePolicy(body: SchedulingPolicyBody, options?: AuthWriteOptions): Promise<SchedulingPolicy>;
  /** `POST /scheduling/optimize`: the best order for the day; changes nothing. 422 below 3 located visits or above 12. */
  optimize(body: OptimizeBody, options?: AuthWriteOptions): Promise<RouteSuggestion>;
  /** `POST /scheduling/apply`: all the new start times or none (404 unknown visit, 422 naming a bad one). */
  apply(body: ApplyScheduleBody, options?: AuthWriteOptions): Promise<{ changed: number }>;
}

export function schedulingApi(call: Invoker): SchedulingApi {
  return {
    policy: (o) => call.data(E['scheduling.policy'], {}, o),
    updatePolicy: (body, o) => call.data(E['scheduling.updatePolicy'], { body }, o),
    optimize: (body, o) => call.data(E['scheduling.optimize'], { body }, o),
    apply: (body, o) => call.data(E['scheduling.apply'], { body }, o),
  };
}
