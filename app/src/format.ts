/** Display formats (the device's locale and time zone). */
import type { Visit, VisitReceipt } from '@fieldchart/client';

export function patientName(v: Pick<Visit, 'patient'>): string {
  return v.patient ? `${v.patient.first_name} ${v.patient.last_name}` : 'Unassigned patient';
}

/** `09:00` (the API's local start time) as the device shows times. */
export function startTime(v: Pick<Visit, 'visit_date' | 'start_time'>): string {
  const [hh = '0', mm = '0'] = v.start_time.split(':');
  const d = new Date(2000, 0, 1, Number(hh), Number(mm));
  return d.toLocaleTimeString([], { hour: '2-digit', minute: '2-digit' });
}

export function dayLabel(date: string): string {
  const [y, m, d] = date.split('-').map(Number);
  return new Date(y ?? 2000, (m ?? 1) - 1, d ?? 1).toLocaleDateString([], { weekday: 'short', month: 'short', day: 'numeric' });
}

export function clockTime(iso: string): string {
  return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export const STATUS_LABEL: Record<Visit['status'], string> = {
  scheduled: 'Scheduled',
  in_progress: 'In progress',
  completed: 'Completed',
  cancelled: 'Cancelled',
  missed: 'Missed',
};

/** The receipt in the clinician's words: where this visit's changes are. */
export function receiptLabel(r: VisitReceipt): { text: string; kind: 'device' | 'server' | 'none' } {
  if (r.state === 'on_device') return { text: 'On this phone', kind: 'device' };
  if (r.state === 'acknowledged') return { text: 'On the server', kind: 'server' };
  return { text: '', kind: 'none' };
}

export const EVENT_LABEL = {
  start_travel: 'Start travel',
  arrive: 'Arrive',
  start_documentation: 'Start documentation',
  complete: 'Complete',
} as const;
