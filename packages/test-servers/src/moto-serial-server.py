"""moto's server with one request at a time.

moto 5.2.5's `moto_server` serves each request in a thread of its own, with no lock around the
DynamoDB backend. Its TransactWriteItems checks and applies item by item, and cancels by restoring a
copy of the whole table taken when it started: a request served meanwhile in another thread can see
half a transaction, or be undone by that restore (a lease claim or a checkpoint lost). DynamoDB
itself applies a transaction atomically. Serving one request at a time gives moto that guarantee
back; everything else is moto's own server.

Usage: python moto-serial-server.py -H 127.0.0.1 -p PORT
"""
import argparse
import threading

from werkzeug.serving import run_simple

from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app


def serialized(app):
    lock = threading.Lock()

    def serve(environ, start_response):
        with lock:
            # The whole response is produced under the lock (an iterable could do work lazily).
            return [b"".join(app(environ, start_response))]

    return serve


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("-H", "--host", default="127.0.0.1")
    parser.add_argument("-p", "--port", type=int, required=True)
    args = parser.parse_args()
    import os

    os.environ.setdefault("MOTO_PORT", str(args.port))
    app = DomainDispatcherApplication(create_backend_app)
    run_simple(args.host, args.port, serialized(app), threaded=True, request_handler=MotoRequestHandler)


if __name__ == "__main__":
    main()
