import { registerDecorator, type ValidationArguments, type ValidationOptions } from 'class-validator';

/**
 * The decorated property must not equal `property` of the same object (a transfer's `to` and `from`).
 * class-validator has no cross-field rule of its own, hence this custom one.
 */
export function DiffersFrom(property: string, options?: ValidationOptions): PropertyDecorator {
  return (target: object, propertyName: string | symbol) => {
    registerDecorator({
      name: 'differsFrom',
      target: target.constructor,
      propertyName: String(propertyName),
      constraints: [property],
      options: { message: `$property must differ from ${property}`, ...options },
      validator: {
        validate(value: unknown, args: ValidationArguments): boolean {
          const [other] = args.constraints as [string];
          return value !== (args.object as Record<string, unknown>)[other];
        },
      },
    });
  };
}
