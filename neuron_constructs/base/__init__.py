"""What every construct shares on top of aws-cdk-lib: argument checks, the checks that parts meet in one account,
Region and VPC, the one place the L1 is reached, log groups, cdk-nag acknowledgements, the synth-time template checks
and the VPC the library makes."""
