export * from './solver.ts';
export * from './great-circle.ts';
export * from './plan.ts';
export * from './learned-location.ts';
