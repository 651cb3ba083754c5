export * from './locked.decorator';
