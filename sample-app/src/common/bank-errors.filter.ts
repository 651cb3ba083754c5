import { ArgumentsHost, Catch, ExceptionFilter, HttpStatus } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import {
  AccountNotFoundError,
  BankError,
  FxProviderRefusedError,
  InsufficientFundsError,
  StaleFenceError,
  UnknownCurrencyError,
} from './bank-errors';

/** The HTTP face of the bank's domain errors (the services know nothing of HTTP). */
@Catch(BankError)
export class BankErrorsFilter implements ExceptionFilter {
  constructor(private readonly adapterHost: HttpAdapterHost) {}

  catch(error: BankError, host: ArgumentsHost): void {
    const status = statusOf(error);
    const body = { statusCode: status, error: error.name, message: error.message };
    this.adapterHost.httpAdapter.reply(host.switchToHttp().getResponse(), body, status);
  }
}

function statusOf(error: BankError): HttpStatus {
  if (error instanceof AccountNotFoundError || error instanceof UnknownCurrencyError) return HttpStatus.NOT_FOUND;
  if (error instanceof InsufficientFundsError) return HttpStatus.UNPROCESSABLE_ENTITY;
  if (error instanceof StaleFenceError) return HttpStatus.CONFLICT;
  if (error instanceof FxProviderRefusedError) return HttpStatus.BAD_GATEWAY;
  return HttpStatus.INTERNAL_SERVER_ERROR;
}
