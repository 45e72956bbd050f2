#!/bin/sh
# A program that never answers the hello.
exec sleep 60
