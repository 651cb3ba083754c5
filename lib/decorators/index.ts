export * from './locked.decorator';
export { Leader } from './leader.decorator';
