#!/bin/sh
# A program that does not speak the protocol at all: prints a banner and exits.
echo "Welcome to some other program"
exit 0
