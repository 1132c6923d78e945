/** The four SOAP sections, in note order: drafts, signed notes and the AI note generator. */
export const SOAP_SECTIONS = ['subjective', 'objective', 'assessment', 'plan'] as const;
export type SoapSection = (typeof SOAP_SECTIONS)[number];
